// ESLint for the TypeScript of the whole repository (issue 34). A small rule set on purpose:
// the compiler (tsc -b, strict) checks types; this checks what it cannot.
import tseslint from "typescript-eslint";
import reactHooks from "eslint-plugin-react-hooks";

export default tseslint.config(
  {
    ignores: ["**/node_modules/**", "**/dist/**", "**/target/**", "**/*.generated.d.ts", "**/.tools/**",
      "**/test-results/**", "**/playwright-report/**", "**/.artifacts/**", "**/.cache/**", "tmp/**"],
  },
  {
    files: ["**/*.{ts,tsx,mts,cts}"],
    languageOptions: { parser: tseslint.parser },
    plugins: { "@typescript-eslint": tseslint.plugin, "react-hooks": reactHooks },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      // No function over 200 lines, the same limit clippy enforces on the collector (clippy.toml).
      "max-lines-per-function": ["error", { max: 200, skipBlankLines: true, skipComments: true }],
      "react-hooks/rules-of-hooks": "error",
      "react-hooks/exhaustive-deps": "error",
    },
  },
);
