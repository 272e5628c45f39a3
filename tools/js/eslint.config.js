// eslint's configuration for the report's scripts: plain ES5-style browser scripts (one IIFE each, sharing
// window.PP and window.PPpure) and the node unit tests of tests/js.
"use strict";
const globals = require("globals");
const js = require("@eslint/js");

module.exports = [
  js.configs.recommended,
  {
    files: ["**/report/assets/*.js"],
    languageOptions: {
      ecmaVersion: 2020,
      sourceType: "script",
      globals: { ...globals.browser, module: "readonly" },
    },
    rules: {
      "no-unused-vars": ["error", { args: "none", caughtErrors: "none" }],
      "no-var": "off",
      eqeqeq: ["error", "always"],
      "no-implicit-globals": "error",
      "no-shadow": "error",
    },
  },
  {
    files: ["**/tests/js/*.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "commonjs", globals: { ...globals.node } },
  },
];
