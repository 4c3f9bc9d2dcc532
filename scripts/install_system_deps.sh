#!/usr/bin/env bash
# System packages the tests and the demo use beyond the virtual environment (docs/DESIGN §3):
#   graphviz  — `dot`, to draw μGraphs as SVG (widgets fall back to a pure-Python layout without it)
#   chromium  — Debian's /usr/bin/chromium, driven by Playwright in tests/browser (never `playwright install`)
#               and by kaleido for static figure export (mw.save_figure, mirage-lab report --figures), which
#               finds it on PATH as `chromium` (or the binary BROWSER_PATH names)
#
# Idempotent and quick when everything is present (no apt call at all). Installs with apt-get only
# when running as root (or with password-less sudo) on a Debian/Ubuntu machine; everywhere else it
# prints what is missing and exits 0, so a developer's `make test` still runs — the browser tests
# then skip themselves and graph drawing uses its fallback.
#
# MIRAGE_LAB_SKIP_SYSTEM_DEPS=1 turns the script into a no-op.
set -euo pipefail

if [[ "${MIRAGE_LAB_SKIP_SYSTEM_DEPS:-0}" == "1" ]]; then
    exit 0
fi

missing=()
command -v dot >/dev/null 2>&1 || missing+=(graphviz)
[[ -x /usr/bin/chromium ]] || missing+=(chromium)

if [[ ${#missing[@]} -eq 0 ]]; then
    exit 0
fi

say() { echo "install_system_deps: $*" >&2; }

if ! command -v apt-get >/dev/null 2>&1; then
    say "missing ${missing[*]}, and apt-get is not available; install them by hand" \
        "(browser tests skip without chromium, graph drawing falls back without dot)"
    exit 0
fi

if [[ "$(id -u)" -eq 0 ]]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
else
    say "missing ${missing[*]}; not root and no password-less sudo, so not installing." \
        "Run: sudo apt-get install graphviz chromium   (browser tests skip until then)"
    exit 0
fi

# fonts-liberation: chromium and graphviz only *recommend* a font; without one, screenshots and
# SVG text metrics are poor. --no-install-recommends keeps the install about half the size.
packages=("${missing[@]}" fonts-liberation)
say "installing ${packages[*]} with apt-get"
start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
say "installed ${packages[*]} in $(( $(date +%s) - start )) s"
