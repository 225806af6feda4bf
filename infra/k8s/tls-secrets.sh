#!/bin/sh
# The two TLS Secrets the manifests mount, from certificates made by infra/redis/make-certs.sh:
#   shiftstream-redis-tls         ca.crt tls.crt tls.key   Redis's server certificate
#   shiftstream-redis-client-tls  ca.crt tls.crt tls.key   the certificate every client shows
#   infra/k8s/tls-secrets.sh [DIR]            # creates them in namespace shiftstream
#   infra/k8s/tls-secrets.sh DIR --print      # only prints them (kubectl --dry-run)
# The server certificate names the Service (redis, redis.NAMESPACE.svc[.cluster.local]) and its
# pod. cert-manager can issue the same Secrets instead (same names and keys).
set -eu
dir=${1:-.secrets/k8s-tls}
ns=${NAMESPACE:-shiftstream}
sh "$(dirname "$0")/../redis/make-certs.sh" "$dir" redis "redis.$ns.svc" \
  "redis.$ns.svc.cluster.local" "redis-0.redis.$ns.svc.cluster.local" localhost >&2
for pair in "shiftstream-redis-tls:server" "shiftstream-redis-client-tls:client"; do
  name=${pair%%:*}
  cert=${pair#*:}
  manifest=$(kubectl create secret generic "$name" --namespace "$ns" --dry-run=client -o yaml \
    --from-file=ca.crt="$dir/ca.crt" --from-file=tls.crt="$dir/$cert.crt" \
    --from-file=tls.key="$dir/$cert.key")
  if [ "${2:-}" = "--print" ]; then
    printf '%s\n---\n' "$manifest"
  else
    printf '%s\n' "$manifest" | kubectl apply -f -
  fi
done
