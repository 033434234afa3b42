// eslint over every TypeScript file that tsconfig.json compiles, with typescript-eslint's
// type-aware recommended rules. Layout and line length are the formatter's job, not eslint's.
import { defineConfig } from "eslint/config";
import js from "@eslint/js";
import comments from "@eslint-community/eslint-plugin-eslint-comments/configs";
import tseslint from "typescript-eslint";

export default defineConfig(
    { ignores: ["dist/", "node_modules/", "vendor-repos/", "test/readme-example.generated.ts", "**/*.js", "**/*.mjs"] },
    js.configs.recommended,
    tseslint.configs.recommendedTypeChecked,
    comments.recommended,
    {
        languageOptions: {
            parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
        },
        linterOptions: { reportUnusedDisableDirectives: "error" },
        rules: {
            // A rule silenced on a line says why, after "--".
            "@eslint-community/eslint-comments/require-description": "error",
            // A file-wide directive is allowed where per-line comments would be serialized (lazy-provider.ts).
            "@eslint-community/eslint-comments/disable-enable-pair": ["error", { allowWholeFile: true }],
            // A leading underscore marks a binding kept on purpose: a field taken out of an
            // object by destructuring (`const { secret: _secret, ...rest } = args`), or a
            // parameter a callback's signature requires.
            "@typescript-eslint/no-unused-vars": [
                "error",
                {
                    argsIgnorePattern: "^_",
                    varsIgnorePattern: "^_",
                    caughtErrorsIgnorePattern: "^_",
                    destructuredArrayIgnorePattern: "^_",
                },
            ],
        },
    },
    {
        // Dynamic providers implement Pulumi's Promise-returning operations; many need no await,
        // and `async` is what turns a synchronous throw into the rejected promise Pulumi expects.
        files: ["components/providers/**/*.ts"],
        rules: { "@typescript-eslint/require-await": "off" },
    },
    {
        // Tests read JSON.parse output, mock resource inputs and parsed YAML/TOML, all typed
        // `any` by their libraries, and the assertions that follow are the shape check; typing
        // each one first would only restate the assertion. `no-explicit-any` stays on here.
        files: ["test/**/*.ts"],
        rules: {
            "@typescript-eslint/no-unsafe-assignment": "off",
            "@typescript-eslint/no-unsafe-member-access": "off",
            "@typescript-eslint/no-unsafe-call": "off",
            "@typescript-eslint/no-unsafe-argument": "off",
            "@typescript-eslint/no-unsafe-return": "off",
        },
    },
);
