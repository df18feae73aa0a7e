#!/usr/bin/env bash
# Runs the README's test command as an ordinary user, on a kernel that offers neither Landlock
# nor namespaces (scripts/without-landlock.py), the way a contributor in a container or on
# Ubuntu 24.04 would: no test may assume root or a kernel feature. .ci/run calls it after the
# root run. It must be started as root (to make the user); as anyone else it says so and
# stops, since that user's own `cargo test --workspace` is the same check.
#
#   scripts/test-as-user.sh              # a copy of this checkout, as user coding-agent-ci
#
# The user gets: a copy of the checkout it owns, its own CARGO_HOME seeded with the registry
# already downloaded (so no network is needed), and the toolchain of whoever runs this script
# (its directories made traversable, not listable, by others). Its build has its own target
# directory, inside its copy.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
    echo "test-as-user: not root, so you are the ordinary user: run cargo test --workspace" >&2
    exit 0
fi
user=coding-agent-ci
id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
home=$(getent passwd "$user" | cut -d: -f6)

cargo_bin=$(dirname "$(command -v cargo)")
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
cargo_home=${CARGO_HOME:-$HOME/.cargo}
# Traversable by others (o+x): the toolchain under root's home, nothing listed or readable
# that was not already.
for dir in "$cargo_bin" "$rustup_home"; do
    d=$dir
    while [ "$d" != / ]; do
        chmod o+x "$d"
        d=$(dirname "$d")
    done
done

copy=$home/checkout
rm -rf "$copy"
mkdir -p "$copy"
# The tracked files and the working tree as they are, not the build.
tar --exclude=./target --exclude='./target-*' -cf - . | tar -xf - -C "$copy"
mkdir -p "$home/.cargo"
if [ -d "$cargo_home/registry" ]; then
    cp -a "$cargo_home/registry" "$home/.cargo/"
fi
chown -R "$user:" "$copy" "$home/.cargo"

echo "== cargo test --workspace as $user (uid $(id -u "$user")), without Landlock or namespaces"
start=$SECONDS
runuser -u "$user" -- env -i \
    HOME="$home" USER="$user" LOGNAME="$user" \
    PATH="$cargo_bin:/usr/local/bin:/usr/bin:/bin" \
    RUSTUP_HOME="$rustup_home" CARGO_HOME="$home/.cargo" \
    CARGO_TERM_COLOR=never RUST_BACKTRACE=0 \
    SANDBOX_TEST_EXPECT_LAYERS=seccomp \
    bash -c 'cd ~/checkout && python3 scripts/without-landlock.py cargo test --workspace --locked --offline'
echo "== as $user: $((SECONDS - start)) s"
# Its build is a second one of the whole workspace: not kept.
rm -rf "$copy/target"
