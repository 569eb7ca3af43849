#!/bin/sh
# Package maintainer script (deb postrm, rpm %postun). The hapticd user,
# group and /var/lib/hapticd stay (the configuration is the lab's); a deb
# purge removes them.
set -e
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
fi
if [ "$1" = "purge" ]; then
  rm -rf /var/lib/hapticd
  if getent passwd hapticd >/dev/null; then userdel hapticd || true; fi
  if getent group hapticd >/dev/null; then groupdel hapticd || true; fi
fi
exit 0
