#!/usr/bin/env bash
# Build the docker executor's base image offline (no registry): a minbase
# Debian bookworm with python3 and git, bootstrapped from this machine's apt
# mirror and imported with `docker import`. Idempotent: when TAG already exists
# it only prints the image id.
#
# Usage: scripts/base-image.sh [TAG [PACKAGES]]
#        TAG       default assay-base:bookworm
#        PACKAGES  more packages to include, comma-separated: the node image
#                  the JavaScript tests run on docker is
#                  `scripts/base-image.sh assay-node:bookworm nodejs`
# Env:   ASSAY_BASE_MIRROR  override the mirror (default: first Debian URI of
#                           /etc/apt/sources.list.d/*.sources or sources.list)
# Prints the image id (sha256:...) on stdout; progress goes to stderr.
set -euo pipefail
TAG=${1:-assay-base:bookworm}
EXTRA=${2:-}
SUITE=bookworm

if id=$(docker image inspect --format '{{.Id}}' "$TAG" 2>/dev/null); then
    echo "$id"
    exit 0
fi

mirror() {
    if [[ -n ${ASSAY_BASE_MIRROR:-} ]]; then
        echo "$ASSAY_BASE_MIRROR"
        return
    fi
    local uri
    # deb822 first (`URIs: ...`), then one-line `deb URI SUITE ...`; the
    # security archive is not a full mirror.
    uri=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources |
        awk '{print $2}' | grep -v -- '-security' | head -n1 || true)
    if [[ -z $uri ]]; then
        uri=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
            awk '{print $2}' | grep -v -- '-security' | grep -i debian | head -n1 || true)
    fi
    echo "${uri:-http://deb.debian.org/debian}"
}

if ! command -v debootstrap >/dev/null; then
    echo "installing debootstrap" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >&2
fi

MIRROR=$(mirror)
root=$(mktemp -d /var/tmp/assay-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "debootstrap $SUITE from $MIRROR into $root" >&2
debootstrap --variant=minbase --include="python3,git${EXTRA:+,$EXTRA}" "$SUITE" "$root" "$MIRROR" >&2

# Keep the image small: no package caches, lists, docs or man pages.
chroot "$root" apt-get clean
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin \
    "$root"/var/cache/debconf/*-old "$root"/var/log/* \
    "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
    "$root"/usr/share/locale/* "$root"/tmp/* "$root"/root/.cache
# debootstrap leaves the host's resolv.conf and hostname behind.
: >"$root/etc/resolv.conf"
: >"$root/etc/hostname"

id=$(tar --numeric-owner -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["/bin/bash"]' \
    --change 'LABEL assay.base=1' \
    --message "assay base: debootstrap --variant=minbase $SUITE from $MIRROR${EXTRA:+ with $EXTRA}" \
    - "$TAG")
echo "$id"
