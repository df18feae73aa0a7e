#!/usr/bin/env bash
# Installs the headless browser the export test opens its page in (chromium, from Debian's
# packages), unless one is already on the PATH. Run as root on Debian or Ubuntu (.ci/run
# does); elsewhere, install chromium yourself and run:
#   cargo test --test export_browser -- --ignored
set -euo pipefail
for browser in chromium chromium-browser google-chrome; do
    if command -v "$browser" >/dev/null 2>&1; then
        echo "browser: $(command -v "$browser")"
        exit 0
    fi
done
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "install-test-browser: no chromium on the PATH, and this is not root on Debian/Ubuntu:" \
        "install chromium to run tests/export_browser.rs" >&2
    exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
echo "browser: $(command -v chromium)"
