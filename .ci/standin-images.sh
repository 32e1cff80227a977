# Local stand-ins for the upstream base images, for machines that cannot pull from
# an image registry. Built only when an image of that name is missing, under the
# upstream names, so the Dockerfiles and docker-compose.yml stay standard:
#   node:24-bookworm-slim     Debian bookworm minbase + Node 24 + npm + a node user (uid 1000)
#   prom/prometheus:v2.42.0   Debian's prometheus 2.42.0 laid out like the upstream image
#   prom/alertmanager:v0.25.0 Debian's alertmanager 0.25.0 laid out like the upstream image
# grafana/grafana has no Debian package and is not made; CI leaves that service out.
#
# Needs: a running engine, the Debian packages from apt-packages.sh, and npm (the
# Node 24 binary comes from ensure-node.sh). Uses the legacy builder (no buildx
# here); nothing built here needs the network, only debootstrap does.

CI_BASE_IMAGE="kvstack-ci/debian:bookworm-minbase"
CI_NODE_IMAGE="node:24-bookworm-slim"
CI_PROMETHEUS_IMAGE="prom/prometheus:v2.42.0"
CI_ALERTMANAGER_IMAGE="prom/alertmanager:v0.25.0"

ci_image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

ci_docker_build() {
  local tag="$1" ctx="$2" started=$SECONDS
  DOCKER_BUILDKIT=0 docker build -q -t "$tag" "$ctx" >/dev/null 2>"$ctx.build.log" || {
    cat "$ctx.build.log" >&2
    ci_die "docker build of $tag failed"
  }
  rm -rf "$ctx" "$ctx.build.log"
  ci_log "built $tag ($(( SECONDS - started ))s)"
}

# A directory debootstrap worked in: unmount whatever it left mounted (a killed run
# leaves /proc, /sys or bind-mounted devices), then delete it without crossing into
# another file system.
ci_remove_rootfs() {
  local dir="$1"
  [[ -e $dir ]] || return 0
  awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
    umount -l "$m" || true
  done
  rm -rf --one-file-system "$dir"
}

# Debian bookworm minbase from debootstrap, as a tarball cached under $CI_WORK so a
# lost image is re-imported in seconds.
ci_base_tarball() { echo "$CI_WORK/debian-bookworm-minbase.tar"; }

ci_make_base_tarball() {
  local tarball rootfs="$CI_WORK/rootfs.tmp" mirror
  tarball="$(ci_base_tarball)"
  mirror="$(ci_debian_mirror)"
  [[ -n $mirror ]] || ci_die "cannot find this system's Debian mirror in /etc/apt/sources.list{,.d/}"
  echo "debootstrap --variant=minbase bookworm $mirror"
  ci_remove_rootfs "$rootfs"
  if ! debootstrap --variant=minbase bookworm "$rootfs" "$mirror"; then
    ci_remove_rootfs "$rootfs"
    return 1
  fi
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
  ci_remove_rootfs "$rootfs"
}

# Needed only when a stand-in is missing and neither the base image nor its tarball exists.
ci_base_tarball_needed() {
  [[ -s $(ci_base_tarball) ]] && return 1
  ci_image_exists "$CI_BASE_IMAGE" && return 1
  local image
  for image in "$CI_NODE_IMAGE" "$CI_PROMETHEUS_IMAGE" "$CI_ALERTMANAGER_IMAGE"; do
    ci_image_exists "$image" || return 0
  done
  return 1
}

# debootstrap takes a minute or more; .ci/run starts it in the background (its own
# process group, so it can be stopped whole) while npm ci runs, and
# ci_ensure_base_image waits for it.
CI_ROOTFS_PID=""
CI_ROOTFS_STARTED=0

ci_start_base_tarball() {
  ci_base_tarball_needed || return 0
  mkdir -p "$CI_WORK"
  setsid bash "$CI_ROOT/.ci/standin-images.sh" --base-tarball </dev/null >"$CI_WORK/debootstrap.log" 2>&1 &
  CI_ROOTFS_PID=$!
  CI_ROOTFS_STARTED=$SECONDS
  ci_log "debootstrap started in the background (pid $CI_ROOTFS_PID, log $CI_WORK/debootstrap.log)"
}

ci_stop_base_tarball() {
  [[ -n $CI_ROOTFS_PID ]] || return 0
  local pid="$CI_ROOTFS_PID"
  CI_ROOTFS_PID=""
  kill -0 -- "-$pid" 2>/dev/null || return 0
  kill -TERM -- "-$pid" 2>/dev/null || true
  local i
  for (( i = 0; i < 40; i++ )); do # the whole group, not only its leader
    kill -0 -- "-$pid" 2>/dev/null || break
    sleep 0.25
  done
  kill -KILL -- "-$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  ci_remove_rootfs "$CI_WORK/rootfs.tmp"
  ci_log "stopped the background debootstrap (process group $pid)"
}

ci_ensure_base_image() {
  ci_image_exists "$CI_BASE_IMAGE" && return
  local tarball started=$SECONDS
  tarball="$(ci_base_tarball)"
  if [[ -n $CI_ROOTFS_PID ]]; then
    local pid="$CI_ROOTFS_PID" rc=0
    ci_log "waiting for the background debootstrap"
    wait "$pid" || rc=$?
    CI_ROOTFS_PID=""
    if (( rc != 0 )); then
      tail -n 30 "$CI_WORK/debootstrap.log" >&2
      ci_die "debootstrap failed (log $CI_WORK/debootstrap.log)"
    fi
    ci_log "debootstrap done ($(( SECONDS - CI_ROOTFS_STARTED ))s since it started)"
  elif [[ ! -s $tarball ]]; then
    ci_log "debootstrap --variant=minbase bookworm"
    ci_make_base_tarball >"$CI_WORK/debootstrap.log" 2>&1 || {
      tail -n 30 "$CI_WORK/debootstrap.log" >&2
      ci_die "debootstrap failed (log $CI_WORK/debootstrap.log)"
    }
    ci_log "debootstrap done ($(( SECONDS - started ))s)"
  fi
  [[ -s $tarball ]] || ci_die "no base rootfs tarball at $tarball"
  docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' \
    "$tarball" "$CI_BASE_IMAGE" >/dev/null
  ci_log "imported $CI_BASE_IMAGE"
}

ci_build_node_image() {
  local ctx="$CI_WORK/image-node" node npm_dir
  node="$(ci_node24_binary)"
  # The Node tarball has no npm; the machine's npm module (npm 11) runs on Node 24.
  npm_dir="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")"
  [[ -f $npm_dir/package.json && $(basename "$npm_dir") == npm ]] || ci_die "cannot locate the npm module (found $npm_dir)"
  rm -rf "$ctx" && mkdir -p "$ctx/include"
  cp "$node" "$ctx/node"
  cp -a "$npm_dir" "$ctx/npm"
  # Node's headers, where the official image has them: the store image compiles its C add-on against them.
  local headers
  headers="$(dirname "$node")/../include/node"
  [[ -f $headers/node_api.h ]] && cp -a "$headers" "$ctx/include/node"
  # The registry is reached through a TLS-inspecting proxy whose CA only the host bundle has.
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/ca-certificates.crt"
  cat >"$ctx/Dockerfile" <<EOF
FROM $CI_BASE_IMAGE
COPY node /usr/local/bin/node
COPY include /usr/local/include
COPY npm /usr/local/lib/node_modules/npm
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
RUN groupadd --gid 1000 node \\
 && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \\
 && ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx
ENV NODE_VERSION=$("$node" -p process.versions.node) \\
    NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \\
    npm_config_cafile=/etc/ssl/certs/ca-certificates.crt \\
    npm_config_update_notifier=false
CMD ["node"]
EOF
  ci_docker_build "$CI_NODE_IMAGE" "$ctx"
}

ci_build_prometheus_image() {
  local ctx="$CI_WORK/image-prometheus"
  rm -rf "$ctx" && mkdir -p "$ctx"
  cp /usr/bin/prometheus /usr/bin/promtool "$ctx/"
  # Debian's build reads its web UI assets from here at run time (symlinks into libjs-* packages).
  cp -rL /usr/share/prometheus/web "$ctx/web"
  cat >"$ctx/prometheus.yml" <<'EOF'
global:
  scrape_interval: 15s
scrape_configs:
  - job_name: prometheus
    static_configs:
      - targets: ["localhost:9090"]
EOF
  # Same layout, user, entrypoint and default flags as the upstream image.
  cat >"$ctx/Dockerfile" <<EOF
FROM $CI_BASE_IMAGE
COPY prometheus promtool /bin/
COPY web /usr/share/prometheus/web
COPY prometheus.yml /etc/prometheus/prometheus.yml
RUN mkdir -p /prometheus /usr/share/prometheus/console_libraries /usr/share/prometheus/consoles \\
 && ln -s /usr/share/prometheus/console_libraries /usr/share/prometheus/consoles/ /etc/prometheus/ \\
 && chown -R nobody:nogroup /etc/prometheus /prometheus
USER nobody
EXPOSE 9090
VOLUME ["/prometheus"]
WORKDIR /prometheus
ENTRYPOINT ["/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus", "--web.console.libraries=/usr/share/prometheus/console_libraries", "--web.console.templates=/usr/share/prometheus/consoles"]
EOF
  ci_docker_build "$CI_PROMETHEUS_IMAGE" "$ctx"
}

ci_build_alertmanager_image() {
  local ctx="$CI_WORK/image-alertmanager"
  rm -rf "$ctx" && mkdir -p "$ctx"
  cp /usr/bin/prometheus-alertmanager "$ctx/alertmanager"
  cp /usr/bin/amtool "$ctx/amtool"
  # Debian's build reads its notification templates and UI from here at run time.
  cp -rL /usr/share/prometheus/alertmanager "$ctx/share"
  cat >"$ctx/alertmanager.yml" <<'EOF'
route:
  receiver: default
receivers:
  - name: default
EOF
  cat >"$ctx/Dockerfile" <<EOF
FROM $CI_BASE_IMAGE
COPY alertmanager amtool /bin/
COPY share /usr/share/prometheus/alertmanager
COPY alertmanager.yml /etc/alertmanager/alertmanager.yml
RUN mkdir -p /alertmanager && chown -R nobody:nogroup /etc/alertmanager /alertmanager
USER nobody
EXPOSE 9093
VOLUME ["/alertmanager"]
WORKDIR /alertmanager
ENTRYPOINT ["/bin/alertmanager"]
CMD ["--config.file=/etc/alertmanager/alertmanager.yml", "--storage.path=/alertmanager"]
EOF
  ci_docker_build "$CI_ALERTMANAGER_IMAGE" "$ctx"
}

# One short run per built image, so a broken stand-in fails here, not in a test.
ci_smoke_image() {
  local image="$1"; shift
  local out
  out="$(docker run --rm "$@" 2>&1)" || { echo "$out" >&2; ci_die "$image does not run"; }
  ci_log "$image: $(echo "$out" | head -n 1)"
}

# A stand-in made before it carried Node's headers is made again.
ci_node_image_has_headers() {
  docker run --rm --entrypoint test "$CI_NODE_IMAGE" -f /usr/local/include/node/node_api.h
}

ci_ensure_standin_images() {
  local built=0
  if ! ci_image_exists "$CI_NODE_IMAGE" || ! ci_node_image_has_headers; then
    ci_ensure_base_image
    ci_build_node_image
    ci_smoke_image "$CI_NODE_IMAGE" --user node "$CI_NODE_IMAGE" \
      sh -c 'echo "node $(node --version), npm $(npm --version), user $(id -un) $(id -u)"'
    built=1
  fi
  if ! ci_image_exists "$CI_PROMETHEUS_IMAGE"; then
    ci_ensure_base_image
    ci_build_prometheus_image
    ci_smoke_image "$CI_PROMETHEUS_IMAGE" --entrypoint /bin/promtool "$CI_PROMETHEUS_IMAGE" \
      check config /etc/prometheus/prometheus.yml
    built=1
  fi
  if ! ci_image_exists "$CI_ALERTMANAGER_IMAGE"; then
    ci_ensure_base_image
    ci_build_alertmanager_image
    ci_smoke_image "$CI_ALERTMANAGER_IMAGE" --entrypoint /bin/amtool "$CI_ALERTMANAGER_IMAGE" \
      check-config /etc/alertmanager/alertmanager.yml
    built=1
  fi
  (( built )) || ci_log "present already: $CI_NODE_IMAGE $CI_PROMETHEUS_IMAGE $CI_ALERTMANAGER_IMAGE"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -Eeuo pipefail
  source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
  if [[ ${1:-} == --base-tarball ]]; then
    ci_make_base_tarball # the background half of ci_start_base_tarball
  else
    source "$(dirname "${BASH_SOURCE[0]}")/ensure-node.sh"
    ci_ensure_standin_images
  fi
fi
