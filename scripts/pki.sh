#!/usr/bin/env bash
# Certificates for OpenFlow over TLS and the HTTPS REST API (docs/tls.md), made with Open
# vSwitch's ovs-pki (package openvswitch-common) and, for the REST server's address, openssl.
#
# usage: scripts/pki.sh --dir DIR [--switches N] [--force]
#   --dir DIR       where everything goes (created; refused if it holds a PKI, unless --force)
#   --switches N    switch certificates sw1..swN (default 2)
#   --force         start over: delete DIR/pki and DIR/foreign first
#
# What DIR holds afterwards (PEM files; *-privkey.pem are private, mode 0600):
#   pki/controllerca, pki/switchca   the two CAs of one ovs-pki PKI (ovs-pki init)
#   controllerca.pem, switchca.pem   their certificates (copies of pki/*/cacert.pem)
#   controller-{cert,privkey}.pem    sdnator's OpenFlow certificate, signed by controllerca
#   sw1-{cert,privkey}.pem ...       switch certificates, signed by switchca
#   rest-{cert,privkey}.pem          sdnator's HTTPS certificate, signed by controllerca, with
#                                    subjectAltName IP:127.0.0.1, DNS:localhost (clients check it)
#   operator-{cert,privkey}.pem      a REST client certificate, signed by controllerca
#   foreign/pki                      a second, unrelated PKI (another ovs-pki init)
#   foreign-sw-{cert,privkey}.pem    a switch certificate from that other switchca: sdnator
#                                    must refuse it (the negative test)
# Wiring: sdnator [southbound] tls_cert/tls_key = controller-*, tls_ca = switchca.pem;
#         OVS: ovs-vsctl set-ssl swN-privkey.pem swN-cert.pem controllerca.pem;
#         [northbound] tls_cert/tls_key = rest-*, optional tls_ca = controllerca.pem;
#         curl --cacert controllerca.pem [--cert operator-cert.pem --key operator-privkey.pem].
set -Eeuo pipefail

DIR=""
SWITCHES=2
FORCE=0
die() { printf 'pki.sh: %s\n' "$*" >&2; exit 2; }
usage() { awk '/^# usage:/ { on = 1 } on && /^#/ { sub(/^# ?/, ""); print; next } on { exit }' "${BASH_SOURCE[0]}"; exit 2; }
while (($#)); do
  case $1 in
    --dir) DIR=${2:-}; shift 2 ;;
    --switches) SWITCHES=${2:-}; shift 2 ;;
    --force) FORCE=1; shift ;;
    -h|--help) usage ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ -n $DIR ]] || die "--dir is required"
[[ $SWITCHES =~ ^[0-9]+$ ]] && ((SWITCHES >= 1 && SWITCHES <= 1000)) || die "--switches must be 1..1000"
command -v ovs-pki >/dev/null || die "ovs-pki not found (apt-get install openvswitch-common)"
command -v openssl >/dev/null || die "openssl not found"

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
if [[ -e $DIR/pki || -e $DIR/foreign ]]; then
  ((FORCE)) || die "$DIR already holds a PKI (use --force to start over)"
  rm -rf "$DIR/pki" "$DIR/foreign"
fi
cd "$DIR"
umask 077
LOG=$DIR/pki.log
: >"$LOG"
pki() { ovs-pki --dir="$1" --log="$LOG" "${@:2}" >>"$LOG" 2>&1 || die "ovs-pki ${*:2} failed (see $LOG)"; }

pki "$DIR/pki" init
pki "$DIR/pki" -u -b -f req+sign controller controller
for i in $(seq 1 "$SWITCHES"); do pki "$DIR/pki" -u -b -f req+sign "sw$i" switch; done
pki "$DIR/pki" -u -b -f req+sign operator controller
cp pki/controllerca/cacert.pem controllerca.pem
cp pki/switchca/cacert.pem switchca.pem

# The HTTPS certificate: clients check the server's name, so it carries the address in a
# subjectAltName (ovs-pki's certificates name only a CN).
openssl req -new -newkey rsa:2048 -nodes -subj "/O=sdnator/CN=127.0.0.1" \
  -keyout rest-privkey.pem -out rest-req.pem >>"$LOG" 2>&1 || die "openssl req (rest) failed (see $LOG)"
printf 'subjectAltName = IP:127.0.0.1, DNS:localhost\nextendedKeyUsage = serverAuth\nbasicConstraints = CA:FALSE\n' >rest.ext
openssl x509 -req -days 3650 -in rest-req.pem -CA controllerca.pem -CAkey pki/controllerca/private/cakey.pem \
  -CAserial pki/controllerca/rest.srl -CAcreateserial -extfile rest.ext -out rest-cert.pem >>"$LOG" 2>&1 \
  || die "openssl x509 (rest) failed (see $LOG)"
rm -f rest.ext

# A second, unrelated PKI: its switch certificate must be refused by a controller trusting switchca.pem.
pki "$DIR/foreign" init
pki "$DIR/foreign" -u -b -f req+sign foreign-sw switch

chmod 0644 ./*-cert.pem controllerca.pem switchca.pem
chmod 0600 ./*-privkey.pem
for f in controller sw1 operator rest; do
  ca=$([[ $f == sw1 ]] && echo switchca.pem || echo controllerca.pem)
  openssl verify -CAfile "$ca" "$f-cert.pem" >/dev/null || die "$f-cert.pem does not verify against $ca"
done
openssl verify -CAfile switchca.pem foreign-sw-cert.pem >/dev/null 2>&1 && die "foreign-sw-cert.pem verifies against switchca.pem"
printf 'pki.sh: PKI in %s: controller, sw1..sw%s, rest (HTTPS), operator, foreign-sw (another CA)\n' "$DIR" "$SWITCHES"
