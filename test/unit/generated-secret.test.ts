/** The passwords the program generates: what any client can be given as they are. */
import * as assert from "assert";
import { create, password } from "../../components/providers/keys/generated-secret-ops";

describe("generated passwords", () => {
    it("are 32 letters and digits: never an option to a CLI (fly login -p), a quote or a URL escape", () => {
        // With a leading `-` once in 64 draws, 4000 draws without one rule out the old alphabet.
        for (let i = 0; i < 4000; i++) assert.match(password(), /^[A-Za-z0-9]{32}$/);
    });

    it("draw every character of the alphabet, each about as often as any other", () => {
        const counts = new Map<string, number>();
        for (let i = 0; i < 2000; i++) for (const c of password()) counts.set(c, (counts.get(c) ?? 0) + 1);
        assert.strictEqual(counts.size, 62);
        // 64,000 characters over 62: about 1032 each; a modulo bias would put the first 8 near 1.25 times that.
        for (const [c, n] of counts) assert.ok(n > 850 && n < 1220, `${c} drawn ${n} times`);
    });

    it("are the value of a password secret, a new one each time", async () => {
        const [a, b] = await Promise.all([create({ kind: "password" }), create({ kind: "password" })]);
        assert.match(a.outs.value, /^[A-Za-z0-9]{32}$/);
        assert.notStrictEqual(a.outs.value, b.outs.value);
        assert.strictEqual(a.outs.publicKeyOpenssh, "");
    });
});
