#!/bin/sh
# Makes the files deploy/compose.secure.yml mounts as Docker secrets, with openssl, into
# a directory git ignores (default deploy/secure; or the first argument, which the
# compose file then takes as KVSTACK_SECURE_DIR):
#   ca.crt            a CA made for this stack (its key, ca.key, signs the three below)
#   store.crt/.key    the store's certificate, for "store" (serverAuth, and clientAuth:
#                     the store's own readiness probe presents it to the store)
#   client.crt/.key   the backend's client certificate towards the store
#   backend.crt/.key  the backend's HTTPS certificate, for localhost and "backend"
#   store-password    the store's password (24 random bytes, base64)
#   tokens            BACKEND_TOKENS_FILE: one write and one read token (24 random bytes each)
# Existing files are kept, so running it again changes nothing; delete the directory to
# start over. Nothing here is committed: the private keys and secrets stay on this machine.
set -eu

dir=${1:-deploy/secure}
days=${KVSTACK_CERT_DAYS:-90}
mkdir -p "$dir"
chmod 700 "$dir"
cd "$dir"
# The containers run as the image's `node` user, which must read the files through their
# bind mounts: they are world-readable, inside a directory only this user can enter.
umask 022

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

if [ ! -f ca.crt ]; then
  key ca.key
  chmod 600 ca.key # never mounted: only this script signs with it
  openssl req -x509 -new -key ca.key -out ca.crt -days 3650 -subj "/CN=kvstack compose CA"
fi

# issue <name> <subject CN> <subjectAltName> <extendedKeyUsage>
issue() {
  [ -f "$1.crt" ] && return 0
  key "$1.key"
  chmod 644 "$1.key" # genpkey makes it 600: see the umask above
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$2"
  printf 'subjectAltName = %s\nextendedKeyUsage = %s\n' "$3" "$4" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" -extfile "$1.ext" -out "$1.crt" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}

issue store store "DNS:store, DNS:localhost, IP:127.0.0.1" "serverAuth, clientAuth"
issue client backend "DNS:backend" "clientAuth"
issue backend backend "DNS:backend, DNS:localhost, IP:127.0.0.1" "serverAuth"

[ -f store-password ] || openssl rand -base64 24 > store-password
if [ ! -f tokens ]; then
  {
    echo "# BACKEND_TOKENS_FILE: <scope> <token>, read (GET, HEAD) or write (every method)"
    echo "write $(openssl rand -base64 24 | tr '+/' '-_')"
    echo "read $(openssl rand -base64 24 | tr '+/' '-_')"
  } > tokens
fi
echo "made $(pwd): ca.crt, store.crt/.key, client.crt/.key, backend.crt/.key, store-password, tokens"
