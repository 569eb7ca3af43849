#!/bin/sh
# Package maintainer script (deb postinst, rpm %post): the hapticd system
# user and group, device access, the state directory, then the service.
set -e

if ! getent group hapticd >/dev/null; then
  groupadd --system hapticd
fi
if ! getent passwd hapticd >/dev/null; then
  useradd --system --gid hapticd --home-dir /var/lib/hapticd --no-create-home \
    --shell /usr/sbin/nologin --comment "hapticd haptic device service" hapticd
fi
# The udev rules (70-hapticd.rules) give serial ports to dialout and RawHID
# boards to plugdev; the service user joins both. plugdev does not exist on
# every distribution, so it is created when missing.
for g in dialout plugdev; do
  getent group "$g" >/dev/null || groupadd --system "$g"
  usermod --append --groups "$g" hapticd
done

install -d -o hapticd -g hapticd -m 0750 /var/lib/hapticd

# Apply the udev rules to devices already plugged in.
if command -v udevadm >/dev/null 2>&1; then
  udevadm control --reload-rules 2>/dev/null || true
  udevadm trigger --subsystem-match=tty --subsystem-match=usb --subsystem-match=hidraw 2>/dev/null || true
fi

# Enable and (re)start the service where systemd runs (not in containers or
# chroots without it).
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload
  systemctl enable hapticd.service >/dev/null 2>&1 || true
  systemctl restart hapticd.service || echo "hapticd: the service did not start; see journalctl -u hapticd" >&2
else
  echo "hapticd: systemd is not running here, so the service was neither enabled nor started;" >&2
  echo "hapticd: run it as the hapticd user: /usr/bin/hapticd --state-dir=/var/lib/hapticd" >&2
fi
exit 0
