#!/usr/bin/env bash
# Mints an HS256 join token with openssl: prints it on stdout.
# Usage: KID=shop-2026 SECRET=<base64url secret> scripts/mint-join-token.sh <account id> <event id> [lifetime in seconds, 600] [one-time id]
set -euo pipefail
sub=${1:-} event=${2:-} ttl=${3:-600} jti=${4:-}
id='^[A-Za-z0-9._:@-]{1,128}$'
[[ $sub =~ $id && $event =~ ^[A-Za-z0-9_-]{1,64}$ && $ttl =~ ^[0-9]+$ && ${KID:-} =~ ^[A-Za-z0-9._-]{1,64}$ ]] || { echo "usage: KID=… SECRET=… $0 <account id> <event id> [seconds] [jti]" >&2; exit 2; }
[[ -z $jti || $jti =~ $id ]] || { echo "jti must be 1-128 characters of [A-Za-z0-9._:@-]" >&2; exit 2; }

b64url() { basenc --base64url --wrap=0 | tr -d '='; } # unpadded base64url of stdin
now=$(date +%s)
header=$(printf '{"alg":"HS256","kid":"%s","typ":"JWT"}' "$KID" | b64url)
claims=$(printf '{"sub":"%s","aud":"%s","iat":%d,"exp":%d%s}' "$sub" "$event" "$now" "$((now + ttl))" \
	"${jti:+,\"jti\":\"$jti\"}" | b64url)
secret=${SECRET:?SECRET must hold the base64url secret} # base64url, padded back for basenc
while ((${#secret} % 4)); do secret+='='; done
hexkey=$(printf '%s' "$secret" | basenc --base64url --decode | od -An -v -tx1 | tr -d ' \n')
sig=$(printf '%s' "$header.$claims" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$hexkey" -binary | b64url)
echo "$header.$claims.$sig"
