# Shared helpers for the CI scripts in .ci/ (sourced, never run).

CI_ROOT="${CI_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
# Downloads, extracted tools and logs; .ci/work/ is gitignored.
CI_WORK="${KVSTACK_CI_WORK:-$CI_ROOT/.ci/work}"
CI_START="${CI_START:-$SECONDS}"
CI_PHASE_NO="${CI_PHASE_NO:-0}"

ci_elapsed() { echo "$(( SECONDS - CI_START ))s"; }

ci_phase() {
  CI_PHASE_NO=$(( CI_PHASE_NO + 1 ))
  printf '\n==> [%d] %s  (t+%s)\n' "$CI_PHASE_NO" "$*" "$(ci_elapsed)"
}

ci_log() { printf '    %s\n' "$*"; }

ci_die() {
  printf 'ci: error: %s\n' "$*" >&2
  exit 1
}

# The Debian mirror URI this machine's own apt sources use for its release
# (so nothing committed names a mirror host). Reads one-line .list files and
# deb822 .sources files; the first "deb" entry whose suite is exactly the
# release codename wins (not -updates or -security).
ci_debian_mirror() {
  local codename f
  codename="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
  [[ -n $codename ]] || ci_die "no VERSION_CODENAME in /etc/os-release"
  {
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [[ -f $f ]] || continue
      awk -v c="$codename" '
        $1 == "deb" {
          i = 2
          if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
          if ($(i + 1) == c) { print $i; exit }
        }' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
      [[ -f $f ]] || continue
      awk -v c="$codename" '
        function flush() {
          if (enabled != "no" && (" " types " ") ~ / deb / && (" " suites " ") ~ (" " c " ") && uris != "") {
            split(uris, u, " "); print u[1]; done = 1; exit
          }
          types = suites = uris = enabled = ""
        }
        /^[ \t]*$/ { flush(); next }
        /^[ \t]*#/ { next }
        { key = tolower($1); $1 = "" }
        key == "types:" { types = $0 }
        key == "suites:" { suites = $0 }
        key == "uris:" { uris = $0 }
        key == "enabled:" { enabled = tolower($2) }
        END { if (!done) flush() }' "$f"
    done
  } | head -n 1
}

# The keyring that signs Debian's archive (also trixie's, via the bookworm key).
ci_debian_keyring() {
  local k=/usr/share/keyrings/debian-archive-keyring.gpg
  [[ -f $k ]] && echo "$k"
}

# Extracts Debian trixie's package $1 (its .deb, without installing it) into directory $2,
# for tools bookworm lacks or has too old whose binaries need only a libc bookworm has.
# The .deb is fetched with a private apt configuration (own source list, lists and cache
# under $CI_WORK): the system's apt state is left untouched. The mirror is the one the
# system's own sources use.
ci_extract_trixie_deb() {
  local pkg="$1" root="$2" apt="$CI_WORK/apt-trixie" mirror keyring signed=""
  mirror="$(ci_debian_mirror)"
  [[ -n $mirror ]] || ci_die "cannot find this system's Debian mirror in /etc/apt/sources.list{,.d/}"
  keyring="$(ci_debian_keyring)"
  [[ -n $keyring ]] && signed="[signed-by=$keyring] "
  rm -rf "$apt"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/deb" "$root"
  echo "deb ${signed}${mirror} trixie main" >"$apt/sources.list"
  local opts=(
    -o "Dir::Etc::SourceList=$apt/sources.list"
    -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$apt/lists"
    -o "Dir::Cache=$apt/cache"
    -o "APT::Sandbox::User=root"
  )
  ci_log "fetching $pkg from trixie ($mirror)"
  apt-get "${opts[@]}" update -qq || ci_die "apt-get update of the private trixie source failed"
  (cd "$apt/deb" && apt-get "${opts[@]}" download -qq "$pkg/trixie") ||
    ci_die "apt-get download $pkg/trixie failed"
  dpkg-deb -x "$apt"/deb/"${pkg}"_*.deb "$root"
  rm -rf "$apt"
}
