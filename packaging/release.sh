#!/usr/bin/env bash
# Builds hapticd's release: an archive per OS and architecture (tar.gz, zip
# for Windows), the Linux .deb packages (cmd/hapticpkg), and SHA256SUMS.
#
#   packaging/release.sh [VERSION]        (default: main.version in cmd/hapticd)
#
# Output goes to $DIST (default dist/). The release is built from a clean
# clone of the committed HEAD (uncommitted changes are not released), so
# every binary is stamped with the git revision (-buildvcs, shown by
# "go version -m" and GET /version's git_hash; the script checks it) and
# the version (-X main.version).
# cgo (and with it RawHID support) is used where a C compiler for the target
# is present: gcc for linux/amd64 on amd64, x86_64-w64-mingw32-gcc for
# windows/amd64, clang on a Mac for darwin. Other targets are built without
# cgo; BUILDS.txt lists which is which. Debian packages no arm64 MinGW, and
# darwin cgo needs the macOS SDK, so those are cgo-free when built on Linux.
set -euo pipefail
cd "$(dirname "$0")/.."

dist=$(realpath -m "${DIST:-dist}")
revision=$(git rev-parse HEAD)
targets="${TARGETS:-linux/amd64 linux/arm64 windows/amd64 windows/arm64 darwin/amd64 darwin/arm64}"

# Go stamps VCS details only where .git is a directory, not in a git
# worktree; a clone of HEAD is stamped everywhere.
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
git clone -q --no-checkout "$(git rev-parse --path-format=absolute --git-common-dir)" "$src"
git -C "$src" checkout -q --detach "$revision"
cd "$src"

version="${1:-$(sed -n 's/^var version = "\(.*\)"$/\1/p' cmd/hapticd/main.go)}"
[ -n "$version" ] || { echo "release: no version given and none found in cmd/hapticd/main.go" >&2; exit 1; }
# A tag's v is no part of the version: the packages drop it, and the
# archives and GET /version must name the same one.
version=${version#v}

rm -rf "$dist"
mkdir -p "$dist/stage"
: > "$dist/BUILDS.txt"

# cc_for prints the C compiler for GOOS/GOARCH on this machine, or nothing.
cc_for() {
  local host_os host_arch
  host_os=$(go env GOHOSTOS); host_arch=$(go env GOHOSTARCH)
  case "$1/$2" in
    "$host_os/$host_arch") command -v "${CC:-gcc}" || command -v clang || true ;;
    windows/amd64) command -v x86_64-w64-mingw32-gcc || true ;;
    linux/arm64) command -v aarch64-linux-gnu-gcc || true ;;
  esac
}

for t in $targets; do
  os=${t%/*}; arch=${t#*/}
  name="hapticd_${version}_${os}_${arch}"
  stage="$dist/stage/$name"
  mkdir -p "$stage"
  exe=hapticd; [ "$os" = windows ] && exe=hapticd.exe
  cc=$(cc_for "$os" "$arch")
  if [ -n "$cc" ]; then cgo=1; hid="RawHID in (cgo, $(basename "$cc"))"; else cgo=0; hid="RawHID compiled out (no cgo)"; fi
  echo "release: $name: $hid"
  GOOS=$os GOARCH=$arch CGO_ENABLED=$cgo CC="${cc:-}" \
    go build -trimpath -buildvcs=true -ldflags "-s -w -X main.version=$version" -o "$stage/$exe" ./cmd/hapticd
  # The revision must be there: a release that says "unknown" is useless in
  # a bug report. (-trimpath keeps -ldflags out of the build info, so the
  # version is checked by running the binary, in .ci/platforms.)
  go version -m "$stage/$exe" | grep -q "vcs.revision=$revision" \
    || { echo "release: $name lacks vcs.revision=$revision" >&2; exit 1; }
  cp README.md "$stage/"
  cp -r docs "$stage/"   # the README links into docs/
  case "$os" in
    linux)  mkdir -p "$stage/packaging"; cp -r packaging/systemd packaging/udev "$stage/packaging/" ;;
    darwin) mkdir -p "$stage/packaging"; cp -r packaging/launchd "$stage/packaging/" ;;
  esac
  if [ "$os" = windows ]; then
    (cd "$dist/stage" && zip -qr "../$name.zip" "$name")
  else
    tar -C "$dist/stage" -czf "$dist/$name.tar.gz" "$name"
  fi
  echo "$name $hid" >> "$dist/BUILDS.txt"
  if [ "$os" = linux ]; then
    go run ./cmd/hapticpkg --bin "$stage/$exe" --arch "$arch" --version "$version" --out "$dist" --formats "${PKG_FORMATS:-deb}"
  fi
done

rm -rf "$dist/stage"
# Only what was built: TARGETS may leave out every Windows (zip) or Linux
# (deb) target.
(cd "$dist" && shopt -s nullglob && sha256sum -- *.tar.gz *.zip *.deb *.rpm > SHA256SUMS)
echo "release: $version ($revision) in $dist:"
cat "$dist/SHA256SUMS"
