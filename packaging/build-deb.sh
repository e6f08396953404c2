#!/usr/bin/env bash
# Builds the Debian package of an already built hookd (`make deb`):
#   packaging/build-deb.sh BUILD_DIR      ->  BUILD_DIR/hookd_VERSION_ARCH.deb
#
# Why dpkg-deb and not dpkg-buildpackage: dpkg-buildpackage wants a full
# source package (debian/rules, changelog, debhelper as a build dependency),
# runs its own clean and build (which would throw away build/), and writes
# into the parent directory, outside the tree. hookd already has a build; the
# package is that binary plus a few files, so a staging tree and
# `dpkg-deb --root-owner-group --build` do it with dpkg (essential) and
# dpkg-dev (for dpkg-shlibdeps, which computes the exact Depends from the
# binary's ELF NEEDED entries and the installed libraries' shlibs/symbols),
# as root or not, without fakeroot.
set -euo pipefail

build=${1:?usage: build-deb.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$(cd "$build" && pwd)
bin="$build/hookd"
[ -x "$bin" ] || { echo "build-deb: $bin not built (run make)" >&2; exit 1; }

version=$(sed -n 's/^#define HOOKD_VERSION "\(.*\)"$/\1/p' "$root/engine/base/version.h")
arch=$(dpkg --print-architecture)
[ -n "$version" ] || { echo "build-deb: no HOOKD_VERSION in engine/base/version.h" >&2; exit 1; }

# dpkg-shlibdeps expects the layout of a source package: debian/control and
# the package's files under debian/PACKAGE/.
work="$build/deb"
stage="$work/debian/hookd"
rm -rf "$work"
mkdir -p "$stage/DEBIAN"
printf 'Source: hookd\n\nPackage: hookd\nArchitecture: any\n' > "$work/debian/control"

install -D -m 0755 "$bin" "$stage/usr/bin/hookd"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$stage/usr/bin/hookd"
install -D -m 0644 "$here/hookd.conf" "$stage/etc/hookd/hookd.conf"
install -D -m 0644 "$here/hookd.service" "$stage/lib/systemd/system/hookd.service"
install -D -m 0644 "$here/hookd@.service" "$stage/lib/systemd/system/hookd@.service"
doc="$stage/usr/share/doc/hookd"
install -D -m 0644 "$root/README.md" "$doc/README.md"
install -D -m 0644 "$root/CHANGELOG.md" "$doc/CHANGELOG.md"
install -D -m 0644 -t "$doc/guides" "$root"/docs/guides/*.md
install -D -m 0644 -t "$doc/guides/deploy" "$root"/docs/guides/deploy/*.md
install -D -m 0644 -t "$doc/reference" "$root"/docs/reference/*.md
install -D -m 0644 "$root/sql/roles/least_privilege.sql" "$doc/least_privilege.sql"
install -D -m 0644 "$root/examples/alerts.yml" "$doc/examples/alerts.yml"
install -D -m 0644 "$root/examples/hookd.conf" "$doc/examples/hookd.conf"
# The references and hookd(1), generated from the binary being packaged, so
# the package's man page always describes its own binary.
/usr/bin/python3 "$root/scripts/gen_reference.py" --bin "$bin" --out "$work/reference" >/dev/null
install -D -m 0644 -t "$doc/reference" "$work/reference/configuration.md" "$work/reference/cli.md"
install -d "$stage/usr/share/man/man1"
gzip -9n < "$work/reference/hookd.1" > "$stage/usr/share/man/man1/hookd.1.gz"
chmod 0644 "$stage/usr/share/man/man1/hookd.1.gz"

for f in postinst prerm postrm; do install -m 0755 "$here/debian/$f" "$stage/DEBIAN/$f"; done
install -m 0644 "$here/debian/conffiles" "$stage/DEBIAN/conffiles"

depends=$(cd "$work" && dpkg-shlibdeps -O -e debian/hookd/usr/bin/hookd 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "build-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" -e "s/@DEPENDS@/$depends/" \
    "$here/debian/control.in" > "$stage/DEBIAN/control"

deb="$build/hookd_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null

# The units as packaged must verify (when systemd-analyze is there to say so).
if command -v systemd-analyze >/dev/null 2>&1; then
    "$here/verify-units.sh" "$stage"
fi
echo "$deb"
