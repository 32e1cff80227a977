// Run before anything loads a .ts file (npm's preinstall and prestart hooks, `kv`, the image
// build): an older Node fails on the first TypeScript import with ERR_UNKNOWN_FILE_EXTENSION
// and a stack trace, which does not say what is wrong. This says it in one line instead.
// Plain JavaScript that any Node since 12 can parse; importing it is enough.
const REQUIRED_MAJOR = 24;
const major = Number(process.versions.node.split('.')[0]);
if (!(major >= REQUIRED_MAJOR)) {
  process.stderr.write(
    `kvstack needs Node.js ${REQUIRED_MAJOR} or newer, and this is Node.js ${process.version}: ` +
      `install Node ${REQUIRED_MAJOR} LTS (https://nodejs.org/, or \`nvm install ${REQUIRED_MAJOR}\`) and run this again.\n`,
  );
  process.exit(1);
}
