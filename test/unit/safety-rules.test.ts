/**
 * Each safety rule of the stack config, pinned alone: a stack valid in every other way, changed at
 * one place to break one rule, gets exactly that rule's problem at that path; and the forms each
 * rule means to let through pass. Every strict object and unknown-key check, and each character
 * class and leading-character rule of value-patterns.ts. Expected problems are written here
 * literally, never read from the production schemas or lists.
 */
import * as assert from "assert";
import { parseStack } from "../../stacks/checks/stack";
import { RawStackConfig, StackConfigError } from "../../stacks/config/stack";
import { NO_GPU, stackWith } from "../fixtures/stacks/inventories";
import { JUMP_KEY, OTHER_TSA_KEY, TSA_KEY } from "../fixtures/ssh-keys/keys";
import { SSH_KEY_PASTE as PASTE } from "../../components/lib/settings/ssh-public-key";

/** An SSH host, an LXD host and a web: valid as it is. */
function baseStack(): RawStackConfig {
    const raw = stackWith({ name: "a", inventory: NO_GPU }) as RawStackConfig & { hosts: unknown[] };
    raw.hosts.push({ name: "l", transport: { lxd: { instance: "l", image: "img", sshPort: 2200 } }, vendor: "none" });
    raw.web = { name: "ci", transport: { lxd: { instance: "ci", image: "img", sshPort: 2201, publish: { web: 8080 } } } };
    return raw;
}

/** The base stack with `value` at the dotted path `at` (list indices as numbers). */
function withValue(at: string, value: unknown): RawStackConfig {
    const raw = baseStack() as unknown as Record<string, unknown>;
    const parts = at.split(".");
    let target = raw;
    for (const part of parts.slice(0, -1)) {
        if (target[part] === undefined) target[part] = {};
        target = target[part] as Record<string, unknown>;
    }
    target[parts[parts.length - 1]] = value;
    return raw;
}

function problems(raw: RawStackConfig): string[] {
    try {
        parseStack(raw);
        return [];
    } catch (e) {
        if (e instanceof StackConfigError) return e.problems;
        throw e;
    }
}

describe("safety rules of the stack config, each pinned alone", () => {
    it("the base stack is valid", () => assert.deepStrictEqual(problems(baseStack()), []));

    describe("every strict object refuses a key it does not know", () => {
        const cases: [string, string][] = [
            [
                "defaults.colour",
                "defaults: unknown key colour (defaults take only selection, verify, driver, toolkit, datasets, wrapper, metrics, containerd, fabricManager, health, allocation, concourse)",
            ],
            ["hosts.0.colour", "hosts[0]: unknown key colour"],
            ["hosts.0.transport.colour", "hosts[0].transport: unknown key colour"],
            ["hosts.0.transport.ssh.colour", "hosts[0].transport.ssh: unknown key colour"],
            ["hosts.1.transport.lxd.colour", "hosts[1].transport.lxd: unknown key colour"],
            ["hosts.1.transport.lxd.server.colour", "hosts[1].transport.lxd.server: unknown key colour"],
            ["web.colour", "web: unknown key colour"],
            ["web.transport.lxd.colour", "web.transport.lxd: unknown key colour"],
            ["web.transport.lxd.publish.colour", "web.transport.lxd.publish: unknown key colour"],
            ["defaults.verify.colour", "defaults.verify: unknown key colour"],
            ["hosts.0.verify.colour", "hosts[0].verify: unknown key colour"],
            ["defaults.driver.colour", "defaults.driver: unknown key colour"],
            ["hosts.0.driver.colour", "hosts[0].driver: unknown key colour"],
            ["defaults.toolkit.colour", "defaults.toolkit: unknown key colour"],
            ["hosts.0.toolkit.colour", "hosts[0].toolkit: unknown key colour"],
            ["defaults.datasets.colour", "defaults.datasets: unknown key colour"],
            ["hosts.0.datasets.colour", "hosts[0].datasets: unknown key colour"],
            ["defaults.wrapper.colour", "defaults.wrapper: unknown key colour"],
            ["hosts.0.wrapper.colour", "hosts[0].wrapper: unknown key colour"],
            ["defaults.containerd.colour", "defaults.containerd: unknown key colour"],
            ["hosts.0.containerd.colour", "hosts[0].containerd: unknown key colour"],
            ["defaults.fabricManager.colour", "defaults.fabricManager: unknown key colour"],
            ["hosts.0.fabricManager.colour", "hosts[0].fabricManager: unknown key colour"],
            ["defaults.allocation.colour", "defaults.allocation: unknown key colour"],
            ["hosts.0.allocation.colour", "hosts[0].allocation: unknown key colour"],
            ["defaults.concourse.colour", "defaults.concourse: unknown key colour"],
            ["hosts.0.concourse.colour", "hosts[0].concourse: unknown key colour"],
        ];
        for (const [at, problem] of cases) it(at, () => assert.deepStrictEqual(problems(withValue(at, 1)), [problem]));
    });

    describe("every value with a grammar: one broken character or leading character, one problem", () => {
        const cases: [string, unknown, string][] = [
            [
                "hosts.0.datasets.root",
                "/srv/a b",
                "hosts[0].datasets.root: expected an absolute path of letters, digits and . _ - + @ : , = ~ (no space, quote, $, backquote, backslash or %)",
            ],
            [
                "hosts.0.datasets.root",
                '/srv/a"b',
                "hosts[0].datasets.root: expected an absolute path of letters, digits and . _ - + @ : , = ~ (no space, quote, $, backquote, backslash or %)",
            ],
            [
                "hosts.0.datasets.root",
                "/srv/a'b",
                "hosts[0].datasets.root: expected an absolute path of letters, digits and . _ - + @ : , = ~ (no space, quote, $, backquote, backslash or %)",
            ],
            [
                "hosts.0.datasets.root",
                "/srv/$x",
                "hosts[0].datasets.root: expected an absolute path of letters, digits and . _ - + @ : , = ~ (no space, quote, $, backquote, backslash or %)",
            ],
            [
                "hosts.0.datasets.root",
                "/srv/a`b",
                "hosts[0].datasets.root: expected an absolute path of letters, digits and . _ - + @ : , = ~ (no space, quote, $, backquote, backslash or %)",
            ],
            [
                "hosts.0.datasets.root",
                "/srv/a\\b",
                "hosts[0].datasets.root: expected an absolute path of letters, digits and . _ - + @ : , = ~ (no space, quote, $, backquote, backslash or %)",
            ],
            [
                "hosts.0.datasets.root",
                "/srv/a%b",
                "hosts[0].datasets.root: expected an absolute path of letters, digits and . _ - + @ : , = ~ (no space, quote, $, backquote, backslash or %)",
            ],
            [
                "hosts.0.datasets.root",
                "/srv/a\nb",
                "hosts[0].datasets.root: expected an absolute path of letters, digits and . _ - + @ : , = ~ (no space, quote, $, backquote, backslash or %)",
            ],
            ["hosts.0.datasets.root", "srv", "hosts[0].datasets.root: expected an absolute path"],
            ["hosts.0.datasets.root", "/srv/", "hosts[0].datasets.root: expected the path in normal form (no . or .. segment, no // and no trailing /): /srv"],
            [
                "hosts.0.datasets.root",
                "/srv//a",
                "hosts[0].datasets.root: expected the path in normal form (no . or .. segment, no // and no trailing /): /srv/a",
            ],
            [
                "hosts.0.datasets.root",
                "/srv/./a",
                "hosts[0].datasets.root: expected the path in normal form (no . or .. segment, no // and no trailing /): /srv/a",
            ],
            [
                "hosts.0.concourse.workDir",
                "/opt/w$x",
                "hosts[0].concourse.workDir: expected an absolute path of letters, digits and . _ - + @ : , = ~ (no space, quote, $, backquote, backslash or %)",
            ],
            [
                "hosts.0.transport.ssh.user",
                "-x",
                "hosts[0].transport.ssh.user: expected a POSIX user name: a letter or _, then letters, digits, _ . or - (at most 32)",
            ],
            [
                "hosts.0.transport.ssh.user",
                "1x",
                "hosts[0].transport.ssh.user: expected a POSIX user name: a letter or _, then letters, digits, _ . or - (at most 32)",
            ],
            [
                "hosts.0.transport.ssh.user",
                "a b",
                "hosts[0].transport.ssh.user: expected a POSIX user name: a letter or _, then letters, digits, _ . or - (at most 32)",
            ],
            [
                "hosts.0.transport.ssh.user",
                "a$b",
                "hosts[0].transport.ssh.user: expected a POSIX user name: a letter or _, then letters, digits, _ . or - (at most 32)",
            ],
            [
                "hosts.0.transport.ssh.user",
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                "hosts[0].transport.ssh.user: expected a POSIX user name: a letter or _, then letters, digits, _ . or - (at most 32)",
            ],
            [
                "hosts.0.concourse.team",
                ".t",
                "hosts[0].concourse.team: expected a team name of letters, digits, _ . and - (not starting with . or -, at most 63)",
            ],
            [
                "hosts.0.concourse.team",
                "-t",
                "hosts[0].concourse.team: expected a team name of letters, digits, _ . and - (not starting with . or -, at most 63)",
            ],
            [
                "hosts.0.concourse.team",
                "t m",
                "hosts[0].concourse.team: expected a team name of letters, digits, _ . and - (not starting with . or -, at most 63)",
            ],
            [
                "hosts.0.datasets.writableSuffixes",
                ["-rw"],
                "hosts[0].datasets.writableSuffixes[0]: expected a folder-name ending of letters, digits, _ . and - (not starting with -), such as _rw",
            ],
            [
                "hosts.0.datasets.writableSuffixes",
                ["_r/w"],
                "hosts[0].datasets.writableSuffixes[0]: expected a folder-name ending of letters, digits, _ . and - (not starting with -), such as _rw",
            ],
            [
                "hosts.0.datasets.writableSuffixes",
                ["_r w"],
                "hosts[0].datasets.writableSuffixes[0]: expected a folder-name ending of letters, digits, _ . and - (not starting with -), such as _rw",
            ],
            ["hosts.0.concourse.tags", ["-t"], "hosts[0].concourse.tags[0]: expected a tag of letters, digits and _.:=+,-"],
            ["hosts.0.concourse.tags", ["a b"], "hosts[0].concourse.tags[0]: expected a tag of letters, digits and _.:=+,-"],
            ["hosts.0.concourse.tags", ["a%b"], "hosts[0].concourse.tags[0]: expected a tag of letters, digits and _.:=+,-"],
            ["hosts.0.concourse.tags", ['a"b'], "hosts[0].concourse.tags[0]: expected a tag of letters, digits and _.:=+,-"],
            [
                "hosts.0.transport.ssh.host",
                "-oProxyCommand=x",
                "hosts[0].transport.ssh.host: expected a DNS name or an IP address, e.g. ci.example.com or 10.0.0.5",
            ],
            ["hosts.0.transport.ssh.host", "a b", "hosts[0].transport.ssh.host: expected a DNS name or an IP address, e.g. ci.example.com or 10.0.0.5"],
            ["hosts.0.transport.ssh.host", "a..b", "hosts[0].transport.ssh.host: expected a DNS name or an IP address, e.g. ci.example.com or 10.0.0.5"],
            // A zoned IPv6 literal, valid in every other way (fe80::1 alone passes, below): `%` means something else in units and URLs.
            [
                "hosts.0.transport.ssh.host",
                "fe80::1%eth0",
                "hosts[0].transport.ssh.host: expected a DNS name or an IP address, e.g. ci.example.com or 10.0.0.5",
            ],
            [
                "hosts.0.transport.ssh.proxy",
                { host: "fe80::1%eth0", privateKeySecret: "jump-key", hostKey: JUMP_KEY },
                "hosts[0].transport.ssh.proxy.host: expected a DNS name or an IP address, e.g. ci.example.com or 10.0.0.5",
            ],
            ["hosts.1.transport.lxd.sshAddress", "fe80::1%eth0", "hosts[1].transport.lxd.sshAddress: expected an IP address, e.g. 127.0.0.1"],
            ["web.transport.lxd.sshAddress", "fe80::1%eth0", "web.transport.lxd.sshAddress: expected an IP address, e.g. 127.0.0.1"],
            ["hosts.0.concourse.tsaHost", "fe80::1%eth0", "hosts[0].concourse.tsaHost: expected a DNS name or an IP address, e.g. ci.example.com or 10.0.0.5"],
            [
                "web.postgres",
                { external: { host: "fe80::1%eth0", user: "concourse", passwordSecret: "db-password" } },
                "web.postgres.external.host: expected a DNS name or an IP address, e.g. ci.example.com or 10.0.0.5",
            ],
            [
                "hosts.0.concourse.tsaPublicKey",
                `${TSA_KEY} x\n${OTHER_TSA_KEY}`,
                `hosts[0].concourse.tsaPublicKey: 2 keys on 2 lines: pin one key, not several (ssh-keyscan prints one line per key type; \`-t ed25519\` picks one); ${PASTE.tsa}`,
            ],
            [
                "hosts.0.concourse.binary",
                {
                    url: "http://a b/x",
                    sha256: "0000000000000000000000000000000000000000000000000000000000000000",
                },
                "hosts[0].concourse.binary.url: expected an http:// or https:// URL of a DNS name or IP address, an optional port and a path of plain characters (no space, quote, $, backquote or backslash)",
            ],
            [
                "hosts.0.concourse.binary",
                {
                    url: "file:///etc/x",
                    sha256: "0000000000000000000000000000000000000000000000000000000000000000",
                },
                "hosts[0].concourse.binary.url: expected an http:// or https:// URL of a DNS name or IP address, an optional port and a path of plain characters (no space, quote, $, backquote or backslash)",
            ],
            [
                "hosts.0.concourse.binary",
                {
                    url: "http://a/$x",
                    sha256: "0000000000000000000000000000000000000000000000000000000000000000",
                },
                "hosts[0].concourse.binary.url: expected an http:// or https:// URL of a DNS name or IP address, an optional port and a path of plain characters (no space, quote, $, backquote or backslash)",
            ],
        ];
        for (const [at, value, problem] of cases)
            it(`${at} = ${JSON.stringify(value)}`, () => assert.deepStrictEqual(problems(withValue(at, value)), [problem]));
    });

    describe("the forms each rule means pass", () => {
        const cases: [string, unknown][] = [
            ["hosts.0.datasets.root", "/srv/a_b-c+d@e:f,g=h~i"],
            ["hosts.0.transport.ssh.user", "_ci.deploy-1"],
            ["hosts.0.concourse.team", "t_1.a-b"],
            ["hosts.0.datasets.writableSuffixes", ["_rw", ".scratch", "rw-x"]],
            ["hosts.0.concourse.tags", ["gpu-devices=0,1", "a:b+c_d.e"]],
            ["hosts.0.transport.ssh.host", "fd00::10"],
            ["hosts.0.transport.ssh.host", "fe80::1"],
            ["hosts.0.transport.ssh.proxy", { host: "fe80::1", privateKeySecret: "jump-key", hostKey: JUMP_KEY }],
            ["hosts.1.transport.lxd.sshAddress", "fe80::1"],
            ["web.transport.lxd.sshAddress", "fe80::1"],
            ["hosts.0.concourse.tsaHost", "fe80::1"],
            ["web.postgres", { external: { host: "fe80::1", user: "concourse", passwordSecret: "db-password" } }],
            [
                "hosts.0.concourse.binary",
                {
                    url: "https://releases.example.com:8443/v8.2.5/concourse-8.2.5-linux-amd64.tgz?x=1&y=2",
                    sha256: "0000000000000000000000000000000000000000000000000000000000000000",
                },
            ],
        ];
        for (const [at, value] of cases) it(`${at} = ${JSON.stringify(value)}`, () => assert.deepStrictEqual(problems(withValue(at, value)), []));
    });
});
