#!/usr/bin/env node
// The `kv` command. Node 24 runs the TypeScript sources directly (type stripping); the
// version check comes first, and the sources load only after it.
import './require-node-24.js';

const { runKv } = await import('../services/cli/kv-main.ts');
process.exitCode = await runKv(process.argv.slice(2));
