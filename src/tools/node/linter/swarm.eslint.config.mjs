// swarm's built-in eslint configuration, for projects without their own:
// eslint's recommended rules, typescript-eslint's for TypeScript files.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const typescript = ['**/*.ts', '**/*.mts', '**/*.cts', '**/*.tsx'];

export default [
  { ignores: ['**/node_modules/**', '**/dist/**', '**/build/**', '**/coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended.map((config) => ({ ...config, files: typescript })),
  {
    languageOptions: {
      globals: { ...globals.node, ...globals.browser, ...globals.jest, ...globals.mocha },
    },
  },
];
