# The filters of the filter benchmark: credentials, Coxswain's route
# config, the request headers each filter's load carries, the check that a
# route really filters, and the results table. Sourced by
# scripts/bench-filters.sh (uses ROOT, WORKDIR).

BENCH_USER=bench
BENCH_PASSWORD=bench-password

# make_credentials : $WORKDIR/htpasswd (one APR1 user, read by nginx and,
# through a Secret, by Coxswain) and BASIC_HEADER; an RSA key, its JWK Set
# (JWKS, one line) and an RS256 token it signed (JWT_HEADER) for JwtAuth.
make_credentials() {
    local hash
    hash=$(openssl passwd -apr1 "$BENCH_PASSWORD")
    printf '%s:%s\n' "$BENCH_USER" "$hash" >"$WORKDIR/htpasswd"
    # nginx's workers run unprivileged and must read it.
    chmod 755 "$WORKDIR"
    chmod 644 "$WORKDIR/htpasswd"
    BASIC_HEADER="Authorization: Basic $(printf '%s:%s' "$BENCH_USER" "$BENCH_PASSWORD" | base64 -w0)"
    make_token
}

b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }

# make_token : JWKS and JWT_HEADER (a token valid for a day, signed RS256).
make_token() {
    local key=$WORKDIR/jwt-key.pem n header payload signature now
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$key" 2>/dev/null
    n=$(openssl rsa -in "$key" -noout -modulus 2>/dev/null | sed 's/^Modulus=//' | xxd -r -p | b64url)
    JWKS="{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"bench\",\"alg\":\"RS256\",\"use\":\"sig\",\"n\":\"$n\",\"e\":\"AQAB\"}]}"
    now=$(date +%s)
    header=$(printf '{"alg":"RS256","kid":"bench","typ":"JWT"}' | b64url)
    payload=$(printf '{"iss":"https://bench.example","sub":"bench","iat":%d,"exp":%d}' \
        "$now" $((now + 86400)) | b64url)
    signature=$(printf '%s.%s' "$header" "$payload" | openssl dgst -sha256 -sign "$key" | b64url)
    JWT_HEADER="Authorization: Bearer $header.$payload.$signature"
}

# coxswain_filter_config : the HTTPRoute (one rule per filter) and the
# filter resources, as YAML.
coxswain_filter_config() {
    local rule filter
    cat <<YAML
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: origin
  namespace: default
spec:
  parentRefs:
    - name: bench
  rules:
YAML
    for filter in bare ratelimit basic gzip jwt; do
        cat <<YAML
    - name: $filter
      matches:
        - path: {type: PathPrefix, value: /$filter}
YAML
        case $filter in
        ratelimit) rule=RateLimit ;;
        basic) rule=BasicAuth ;;
        gzip) rule=Compression ;;
        jwt) rule=JwtAuth ;;
        *) rule="" ;;
        esac
        if [ -n "$rule" ]; then
            cat <<YAML
      filters:
        - type: ExtensionRef
          extensionRef: {group: gateway.coxswain-labs.dev, kind: $rule, name: bench}
YAML
        fi
        cat <<YAML
      backendRefs:
        - name: origin
          port: 80
YAML
    done
    cat <<YAML
---
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: RateLimit
metadata:
  name: bench
  namespace: default
spec:
  requests: 1000000000
  unit: Second
  key: {type: ClientIP}
---
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: BasicAuth
metadata:
  name: bench
  namespace: default
spec:
  secretRef: {name: bench-htpasswd}
---
apiVersion: v1
kind: Secret
metadata:
  name: bench-htpasswd
  namespace: default
  labels:
    ingress.coxswain-labs.dev/auth-basic: "true"
stringData:
  auth: '$(cat "$WORKDIR/htpasswd")'
---
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: Compression
metadata:
  name: bench
  namespace: default
spec:
  gzip: true
  level: 6
  minSize: 1024
  types: [text/plain]
---
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: JwtAuth
metadata:
  name: bench
  namespace: default
spec:
  issuer: https://bench.example
  jwks:
    inline:
      jwks: '$JWKS'
YAML
}

# has_nginx_equivalent FILTER : whether open-source nginx can do FILTER
# (it has no JWT validation).
has_nginx_equivalent() { [ "$1" != jwt ]; }

# request_headers FILTER : the headers of the load for FILTER, one a line.
request_headers() {
    case $1 in
    basic) echo "$BASIC_HEADER" ;;
    gzip) echo "Accept-Encoding: gzip" ;;
    jwt) echo "$JWT_HEADER" ;;
    esac
}

# check_filter PROXY FILTER URL : exits unless the route answers 200 to
# the load's request, (for basic and jwt) 401 without credentials and (for
# gzip) a gzip-encoded body.
check_filter() {
    local proxy=$1 filter=$2 url=$3 code header=() line deadline=$((SECONDS + 20))
    while IFS= read -r line; do header+=(-H "$line"); done < <(request_headers "$filter")
    while :; do
        code=$(curl -s -o /dev/null -w '%{http_code}' "${header[@]}" "$url" || true)
        [ "$code" = 200 ] && break
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "$proxy /$filter answered $code, not 200" >&2
            exit 1
        fi
        wait_a_moment
    done
    if [ "$filter" = basic ] || [ "$filter" = jwt ]; then
        code=$(curl -s -o /dev/null -w '%{http_code}' "$url" || true)
        [ "$code" = 401 ] || { echo "$proxy /$filter without credentials answered $code" >&2; exit 1; }
    fi
    if [ "$filter" = gzip ]; then
        curl -s -D - -o /dev/null "${header[@]}" "$url" | grep -qi '^content-encoding: *gzip' ||
            { echo "$proxy /gzip answered without Content-Encoding: gzip" >&2; exit 1; }
    fi
    if [ "$filter" = ratelimit ] && [ "$proxy" = coxswain ]; then
        curl -s -D - -o /dev/null "$url" | grep -qi '^ratelimit-policy:' ||
            { echo "coxswain /ratelimit carries no RateLimit-Policy" >&2; exit 1; }
    fi
}

# render_filter_table RESULTS FILTERS : the markdown table of medians.
render_filter_table() {
    python3 - "$1" "$2" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
filters = sys.argv[2].split()
per = {}
for proxy, filt, requests, rps, p50, p99, errors, cpu in rows:
    rate = float(requests) / float(cpu) if float(cpu) > 0 else 0.0
    per.setdefault((proxy, filt), []).append((rate, rps, p99, int(errors)))
def median(key):
    runs = sorted(per.get(key, []))
    return runs[(len(runs) - 1) // 2] if runs else None
print("| Filter | nginx per CPU-s | Coxswain per CPU-s | **Coxswain / nginx** | nginx vs its bare | Coxswain vs its bare | Coxswain p99 ms | Errors |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for f in filters:
    n, c = median(("nginx", f)), median(("coxswain", f))
    nb, cb = median(("nginx", "bare")), median(("coxswain", "bare"))
    errors = sum(r[3] for k, v in per.items() if k[1] == f for r in v)
    cell = lambda m: f"{m[0]:.0f}" if m else "-"
    ratio = f"**{c[0] / n[0]:.2f}x**" if n and c and n[0] else "-"
    vs = lambda m, b: f"{m[0] / b[0]:.2f}x" if m and b and b[0] else "-"
    print(f"| {f} | {cell(n)} | {cell(c)} | {ratio} | {vs(n, nb)} | {vs(c, cb)} | {c[2] if c else '-'} | {errors} |")
PY
}
