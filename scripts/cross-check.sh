#!/usr/bin/env bash
# Checks that the workspace compiles, and passes clippy, for macOS (Intel and Apple silicon) and
# Windows, from Linux. Only checking is possible here: there is no macOS SDK or Windows import
# library to link against, so nothing is run. `.ci/run` calls it; run it by hand the same way:
#
#   scripts/cross-check.sh            # all three targets
#   scripts/cross-check.sh x86_64-pc-windows-gnu
#
# The C dependencies (ring, onig) are compiled with zig as the C compiler (`ziglang` from PyPI,
# installed into a virtual environment under target/), through small wrappers that drop the
# arguments cc-rs adds for clang which zig rejects (`--target=…`, `-mmacosx-version-min=…`).
# The Rust standard library of each target comes from rustup. When either cannot be
# downloaded, the script says so and exits 0 without checking: a missing download is not a
# compile error, and the rest of CI still means something.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
    TARGETS=(x86_64-apple-darwin aarch64-apple-darwin x86_64-pc-windows-gnu)
fi
# The zig release the wrappers were written against; cc-rs's arguments change with it rarely.
ZIG_VERSION=0.17.1
WORK=$PWD/target/cross-tools
mkdir -p "$WORK"

skip() {
    echo "== cross-check SKIPPED: $*" >&2
    exit 0
}

command -v rustup >/dev/null 2>&1 || skip "rustup is not installed, so no other target's standard library can be added"
installed=$(rustup target list --installed)
for target in "${TARGETS[@]}"; do
    if ! grep -qx "$target" <<<"$installed"; then
        rustup target add "$target" || skip "rustup could not download the standard library for $target"
    fi
done

if [ ! -x "$WORK/venv/bin/python" ] || ! "$WORK/venv/bin/python" -m ziglang version 2>/dev/null | grep -qx "$ZIG_VERSION"; then
    python3 -m venv "$WORK/venv" || skip "python3 cannot make a virtual environment (Debian: apt-get install python3-venv)"
    "$WORK/venv/bin/pip" install --quiet --disable-pip-version-check "ziglang==$ZIG_VERSION" \
        || skip "pip could not install ziglang==$ZIG_VERSION"
fi

# One wrapper per zig target: `cc` and `ar`.
wrapper() {
    local zig_target=$1 kind=$2 file="$WORK/$1-$2"
    if [ "$kind" = cc ]; then
        cat >"$file" <<EOF
#!/usr/bin/env bash
args=()
for arg in "\$@"; do
    case "\$arg" in
        --target=*|-mmacosx-version-min=*|-mmacos-version-min=*) ;;
        *) args+=("\$arg") ;;
    esac
done
exec "$WORK/venv/bin/python" -m ziglang cc -target $zig_target "\${args[@]}"
EOF
    else
        cat >"$file" <<EOF
#!/usr/bin/env bash
exec "$WORK/venv/bin/python" -m ziglang ar "\$@"
EOF
    fi
    chmod +x "$file"
    echo "$file"
}

status=0
for target in "${TARGETS[@]}"; do
    case "$target" in
        x86_64-apple-darwin) zig_target=x86_64-macos ;;
        aarch64-apple-darwin) zig_target=aarch64-macos ;;
        x86_64-pc-windows-gnu) zig_target=x86_64-windows-gnu ;;
        *) echo "unknown target $target" >&2; exit 2 ;;
    esac
    var=${target//-/_}
    export "CC_$var=$(wrapper "$zig_target" cc)"
    export "AR_$var=$(wrapper "$zig_target" ar)"
    echo "== cargo clippy --target $target (check and lints)"
    start=$SECONDS
    if ! cargo clippy --workspace --all-targets --locked --target "$target" -- -D warnings; then
        status=1
    fi
    echo "== $target took $((SECONDS - start)) s"
done
exit $status
