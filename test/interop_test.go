package test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/internal/testkit/testws"
)

// pyjwtCheck verifies tokens with PyJWT the way the integration guide
// tells a Python shop to (docs/integration.md): the keys from the gateway's
// JWKS through PyJWKClient, EdDSA only, the event as audience, the issuer
// and every claim required. It reads {"jwks","iss","cases":{name:{"token",
// "aud"}}} and prints, per case, the claims or the name of the exception.
const pyjwtCheck = `
import json, sys
import jwt
from jwt import PyJWKClient

args = json.load(sys.stdin)
keys = PyJWKClient(args["jwks"])
out = {}
for name, case in args["cases"].items():
    try:
        key = keys.get_signing_key_from_jwt(case["token"])
        claims = jwt.decode(case["token"], key.key, algorithms=["EdDSA"], audience=case["aud"], issuer=args["iss"],
                            options={"require": ["iss", "sub", "aud", "iat", "nbf", "exp", "jti"]})
        out[name] = {"ok": True, "sub": claims["sub"], "jti": claims["jti"], "exp": claims["exp"], "kid": key.key_id}
    except Exception as e:
        out[name] = {"ok": False, "error": type(e).__name__}
print(json.dumps(out))
`

// joseCheck does the same with Node's jose (panva's, Debian's node-jose,
// 4.x), as the guide's Node example does: createRemoteJWKSet on the
// gateway's JWKS, jwtVerify with EdDSA only, the event as audience, the
// issuer; jose 4.11 has no requiredClaims, so the script checks the claims
// are there. An error is named by its code, and the claim for a claim's.
const joseCheck = `
const { createRemoteJWKSet, jwtVerify } = require("jose");
let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", async () => {
  const args = JSON.parse(input);
  const jwks = createRemoteJWKSet(new URL(args.jwks));
  const out = {};
  for (const [name, c] of Object.entries(args.cases)) {
    try {
      const { payload, protectedHeader } = await jwtVerify(c.token, jwks, { algorithms: ["EdDSA"], audience: c.aud, issuer: args.iss });
      for (const claim of ["iss", "sub", "aud", "iat", "nbf", "exp", "jti"]) {
        if (!(claim in payload)) throw Object.assign(new Error("missing " + claim), { code: "MISSING_CLAIM", claim });
      }
      out[name] = { ok: true, sub: payload.sub, jti: payload.jti, exp: payload.exp, kid: protectedHeader.kid };
    } catch (e) {
      out[name] = { ok: false, error: e.code + (e.claim ? ":" + e.claim : "") };
    }
  }
  console.log(JSON.stringify(out));
});
`

// python is Debian's interpreter, where apt's python3-jwt is (PATH's
// python3 may be another one).
const python = "/usr/bin/python3"

// nodePath is where Debian's node-* packages put their modules; NODE_PATH
// points there, for a node that does not look there itself.
const nodePath = "/usr/share/nodejs"

// jwtLibrary is a JWT library of another runtime, verifying tokens as the
// integration guide tells its shops to, and the names it gives the
// refusals this test expects.
type jwtLibrary struct {
	name    string
	probe   []string // a command that prints the library's version
	install string   // the Debian packages it takes
	argv    []string // runs the check script, reading the cases on stdin
	env     []string
	refusal map[string]string // case → the error it must give
}

var jwtLibraries = []jwtLibrary{
	{
		name:    "PyJWT",
		probe:   []string{python, "-c", "import jwt; from jwt import PyJWKClient; from jwt.algorithms import OKPAlgorithm; print(jwt.__version__)"},
		install: "python3-jwt python3-cryptography",
		argv:    []string{python, "-c", pyjwtCheck},
		refusal: map[string]string{"tampered": "InvalidSignatureError", "other event": "InvalidAudienceError", "other issuer": "InvalidIssuerError", "expired": "ExpiredSignatureError"},
	},
	{
		name:    "node jose",
		probe:   []string{"node", "-e", `const j = require("jose"); if (!j.createRemoteJWKSet || !j.jwtVerify) throw new Error("no createRemoteJWKSet"); console.log(require("jose/package.json").version)`},
		install: "nodejs node-jose",
		argv:    []string{"node", "-e", joseCheck},
		env:     []string{"NODE_PATH=" + nodePath},
		refusal: map[string]string{"tampered": "ERR_JWS_SIGNATURE_VERIFICATION_FAILED", "other event": "ERR_JWT_CLAIM_VALIDATION_FAILED:aud", "other issuer": "ERR_JWT_CLAIM_VALIDATION_FAILED:iss", "expired": "ERR_JWT_EXPIRED:exp"},
	},
}

// require stops the test unless the library is installed (scripts/test.sh
// installs it; with CI=true its absence fails).
func (l jwtLibrary) require(t *testing.T) {
	t.Helper()
	cmd := exec.Command(l.probe[0], l.probe[1:]...)
	cmd.Env = append(os.Environ(), l.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		testenv.Unavailable(t, "%s (apt-get install %s): %v: %s", l.name, l.install, err, out)
	}
	t.Logf("%s %s", l.name, bytes.TrimSpace(out))
}

type jwtCase struct {
	Token string `json:"token"`
	Aud   string `json:"aud"`
}

type jwtResult struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
	Sub   string `json:"sub"`
	JTI   string `json:"jti"`
	Exp   int64  `json:"exp"`
	Kid   string `json:"kid"`
}

// verify runs the library's check on cases against the JWKS at jwks,
// expecting the issuer iss.
func (l jwtLibrary) verify(t *testing.T, jwks, iss string, cases map[string]jwtCase) map[string]jwtResult {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"jwks": jwks, "iss": iss, "cases": cases})
	cmd := exec.Command(l.argv[0], l.argv[1:]...)
	cmd.Env = append(os.Environ(), l.env...)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", l.name, err, stderr.String())
	}
	var res map[string]jwtResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%s said %s: %v", l.name, out, err)
	}
	return res
}

// TestEntryTokenVerifiesWithJWTLibraries: a token a running ws-gateway
// signed verifies with JWT libraries nobody here wrote, in two other
// runtimes (PyJWT, and Node's jose), each fed the gateway's JWKS; each
// also refuses it tampered, for another event, from another issuer and,
// once its stay has ended, expired.
func TestEntryTokenVerifiesWithJWTLibraries(t *testing.T) {
	const iss = "https://queue.example.test"
	sys := testsys.Start(t, testsys.Options{})
	common := []string{"WAITQ_KAFKA_BROKERS=" + strings.Join(sys.Kafka.ListenAddrs(), ","), "WAITQ_REDIS_URL=" + sys.Redis.URL(), "WAITQ_TICKET_SECRET=" + ticketSecret}
	producer := startProc(t, "producer-api", append(common, "WAITQ_ADMIN_TOKEN="+adminToken)...)
	startProc(t, "ingest-consumer", append(common, "WAITQ_DISCOVERY_INTERVAL=200ms")...)
	gw := startProc(t, "ws-gateway", append(common, "WAITQ_STATUS_INTERVAL=100ms", "WAITQ_ADMIT_INTERVAL=200ms", "WAITQ_PUBLIC_URL="+iss)...)

	ev := testenv.EventID(t)
	req, _ := http.NewRequest(http.MethodPut, producer.URL()+"/v1/admin/events/"+ev, strings.NewReader(`{"capacity":1,"staySeconds":12,"partitions":1}`))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create event: %v %v", resp, err)
	}
	req, _ = http.NewRequest(http.MethodPost, producer.URL()+"/v1/events/"+ev+"/queue", nil)
	req.Header.Set("X-User-Id", "alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("join: %v %v", resp, err)
	}
	var j struct{ Ticket string }
	_ = json.NewDecoder(resp.Body).Decode(&j)
	resp.Body.Close()
	c, err := testws.Dial(t, "ws://"+gw.Addr()+"/queue-status/"+ev+"?ticket="+j.Ticket, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := c.Admitted(15 * time.Second)
	token := a.EntryToken
	t.Logf("token %s", token)

	// Tampered: the claims re-encoded with another user, the signature kept.
	parts := strings.Split(token, ".")
	claims, _ := base64.RawURLEncoding.DecodeString(parts[1])
	forged := parts[0] + "." + base64.RawURLEncoding.EncodeToString(bytes.Replace(claims, []byte(`"sub":"alice"`), []byte(`"sub":"mallory"`), 1)) + "." + parts[2]
	jwks := gw.URL() + "/.well-known/jwks.json"
	// The gateway agrees on the same token (its own library path).
	if v := verifyAtGateway(t, gw.URL(), token); v.State != "admitted" || v.UserID != "alice" {
		t.Fatalf("the gateway's verify: %+v", v)
	}
	var exp int64
	for _, l := range jwtLibraries {
		t.Run(l.name, func(t *testing.T) {
			l.require(t)
			res := l.verify(t, jwks, iss, map[string]jwtCase{
				"valid":       {token, ev},
				"tampered":    {forged, ev},
				"other event": {token, "other-" + ev},
			})
			if r := res["valid"]; !r.OK || r.Sub != "alice" || r.JTI == "" || r.Exp*1000 < a.ExpiresAt || r.Exp*1000 >= a.ExpiresAt+1000 || r.Kid == "" {
				t.Fatalf("%s on the gateway's token: %+v (frame expiresAt %d)", l.name, r, a.ExpiresAt)
			}
			exp = res["valid"].Exp
			res["other issuer"] = l.verify(t, jwks, "https://elsewhere.example.test", map[string]jwtCase{"token": {token, ev}})["token"]
			for _, name := range []string{"tampered", "other event", "other issuer"} {
				if r := res[name]; r.OK || r.Error != l.refusal[name] {
					t.Errorf("%s on the %s token: %+v, want %s", l.name, name, r, l.refusal[name])
				}
			}
		})
	}
	if exp == 0 {
		return // no library ran
	}
	// Once the hold has ended, every library refuses it (no leeway).
	time.Sleep(time.Until(time.Unix(exp, 0)) + 100*time.Millisecond)
	for _, l := range jwtLibraries {
		t.Run(l.name+" expired", func(t *testing.T) {
			l.require(t)
			if r := l.verify(t, jwks, iss, map[string]jwtCase{"expired": {token, ev}})["expired"]; r.OK || r.Error != l.refusal["expired"] {
				t.Errorf("%s after the hold: %+v, want %s", l.name, r, l.refusal["expired"])
			}
		})
	}
}

type verifyAnswer struct {
	Valid  bool   `json:"valid"`
	State  string `json:"state"`
	UserID string `json:"userId"`
}

func verifyAtGateway(t *testing.T, base, token string) verifyAnswer {
	t.Helper()
	resp, err := http.Post(base+"/v1/entry/verify", "application/json", strings.NewReader(fmt.Sprintf(`{"token":%q}`, token)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v verifyAnswer
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("verify: %d %v", resp.StatusCode, err)
	}
	return v
}
