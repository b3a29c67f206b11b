#!/bin/sh
# Builds the systemd guest's root file system image once; `make test-v2` keeps it in .cache/.
# A Debian minbase (debootstrap, from Debian's packages) whose init is systemd (udev too: without
# it no device unit ever appears and the boot waits them out), with a user
# `agent` (uid 1000) whose user manager, user@1000.service, starts at boot (linger), and one
# unit that runs whatever tar archive the second disk holds (tests_v2/systemd/inside.sh
# and the source tree, made afresh for each run) and powers the guest off.
# Usage: make_root.sh IMAGE; writes only IMAGE and IMAGE.d (kept until the image is made, so an
# interrupted build starts again from what debootstrap finished).
set -eu
image=$1
root=$image.d
if [ ! -e "$root/.debootstrapped" ]; then
    rm -rf "$root"
    debootstrap --variant=minbase \
        --include=systemd,systemd-sysv,udev,dbus,dbus-user-session,libpam-systemd,python3,procps \
        bookworm "$root" http://deb.debian.org/debian >"$image.log" 2>&1
    touch "$root/.debootstrapped"
fi
echo v2guest > "$root/etc/hostname"
chroot "$root" id agent >/dev/null 2>&1 || chroot "$root" useradd --create-home --uid 1000 --shell /bin/sh agent
mkdir -p "$root/var/lib/systemd/linger" "$root/opt/v2"
touch "$root/var/lib/systemd/linger/agent"
for unit in serial-getty@ttyS0.service console-getty.service getty@tty1.service \
    systemd-timesyncd.service apt-daily.timer apt-daily-upgrade.timer; do
    ln -sf /dev/null "$root/etc/systemd/system/$unit"
done
cat > "$root/opt/v2/boot.sh" <<'SCRIPT'
#!/bin/sh
# The run of one boot: unpack the second disk's archive and run its inside.sh on the console.
echo "swarmdeck-v2: the guest is up" > /dev/ttyS0
i=0
while [ $i -lt 240 ] && ! systemctl --quiet is-active user@1000.service; do
    sleep 0.5; i=$((i+1))
done
rm -rf /opt/v2/work && mkdir -p /opt/v2/work
tar -xf /dev/vdb -C /opt/v2/work && sh /opt/v2/work/tests_v2/systemd/inside.sh
systemctl poweroff --no-block
SCRIPT
cat > "$root/etc/systemd/system/swarmdeck-v2.service" <<'UNIT'
[Unit]
Description=swarmdeck cgroup v2 checks under systemd
[Service]
Type=oneshot
ExecStart=/bin/sh /opt/v2/boot.sh
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
[Install]
WantedBy=multi-user.target
UNIT
ln -sf /etc/systemd/system/swarmdeck-v2.service \
    "$root/etc/systemd/system/multi-user.target.wants/swarmdeck-v2.service"
rm -f "$image.tmp"
mkfs.ext4 -q -d "$root" -L v2root "$image.tmp" 1G
mv "$image.tmp" "$image"
rm -rf "$root" "$image.log"
