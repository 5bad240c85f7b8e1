#!/usr/bin/env bash
# What the guests need from Debian: QEMU, a static busybox, cpio, and the vmlinuz of the current
# linux-image-amd64 (only that file is extracted from the package, into CACHE/kernel/).
# Usage: install_deps.sh CACHE. Does nothing that is already done.
set -euo pipefail
cache="$1"
kernel="$cache/kernel/vmlinuz"
updated=0

apt_update() {
    if [ "$updated" = 0 ]; then
        echo "numa-vm: apt-get update" >&2
        apt-get update -qq >&2
        updated=1
    fi
}

need_root() {
    if [ "$(id -u)" != 0 ]; then
        echo "numa-vm: $1 is missing and installing it needs root (sudo $0 $cache)" >&2
        exit 2
    fi
}

missing=()
command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
dpkg -s busybox-static >/dev/null 2>&1 || missing+=(busybox-static)
command -v cpio >/dev/null || missing+=(cpio)
if [ "${#missing[@]}" -gt 0 ]; then
    need_root "${missing[*]}"
    apt_update
    echo "numa-vm: apt-get install ${missing[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

if [ ! -s "$kernel" ]; then
    need_root "the guest kernel"
    package=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
    if [ -z "$package" ]; then
        apt_update
        package=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
    fi
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    echo "numa-vm: fetching $package for its vmlinuz" >&2
    (cd "$work" && apt-get download -qq "$package" 2>/dev/null || { apt_update; apt-get download -qq "$package"; })
    dpkg-deb -x "$work"/linux-image-*.deb "$work/x"
    mkdir -p "$cache/kernel"
    cp "$work"/x/boot/vmlinuz-* "$kernel.tmp"
    echo "$package" > "$cache/kernel/package"
    mv "$kernel.tmp" "$kernel"
fi
