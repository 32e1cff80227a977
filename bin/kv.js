#!/usr/bin/env node
// The `kv` command. The version check comes first, and the sources load only after it.
// In a checkout Node runs the TypeScript sources directly (type stripping); an installed
// package runs the JavaScript that `npm pack` built into lib/, since Node refuses to strip
// types under node_modules and the package carries no sources.
import { existsSync } from 'node:fs';
import './require-node-24.js';

const source = new URL('../services/cli/kv-main.ts', import.meta.url);
const installed = import.meta.url.includes('/node_modules/') || !existsSync(source);
const { runKv } = await import(installed ? '../lib/cli/kv-main.js' : '../services/cli/kv-main.ts');
process.exitCode = await runKv(process.argv.slice(2));
