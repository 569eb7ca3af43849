#!/bin/sh
# Package maintainer script (deb prerm, rpm %preun): stop the service before
# its files go. On an upgrade (deb "upgrade", rpm "1") the new package's
# postinstall restarts it.
set -e
case "$1" in
  upgrade|1) exit 0 ;;
esac
if [ -d /run/systemd/system ]; then
  systemctl disable --now hapticd.service >/dev/null 2>&1 || true
fi
exit 0
