package test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
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

// python is Debian's interpreter, where apt's python3-jwt is (PATH's
// python3 may be another one).
const python = "/usr/bin/python3"

// requirePyJWT stops the test unless Debian's python3-jwt can verify EdDSA
// (scripts/test.sh installs it; with CI=true its absence fails).
func requirePyJWT(t *testing.T) {
	t.Helper()
	out, err := exec.Command(python, "-c", "import jwt; from jwt import PyJWKClient; from jwt.algorithms import OKPAlgorithm; print(jwt.__version__)").CombinedOutput()
	if err != nil {
		testenv.Unavailable(t, "PyJWT with EdDSA (apt-get install python3-jwt python3-cryptography): %v: %s", err, out)
	}
	t.Logf("PyJWT %s", bytes.TrimSpace(out))
}

type pyCase struct {
	Token string `json:"token"`
	Aud   string `json:"aud"`
}

type pyResult struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
	Sub   string `json:"sub"`
	JTI   string `json:"jti"`
	Exp   int64  `json:"exp"`
	Kid   string `json:"kid"`
}

func runPyJWT(t *testing.T, jwks, iss string, cases map[string]pyCase) map[string]pyResult {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"jwks": jwks, "iss": iss, "cases": cases})
	cmd := exec.Command(python, "-c", pyjwtCheck)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("PyJWT: %v\n%s", err, stderr.String())
	}
	var res map[string]pyResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("PyJWT said %s: %v", out, err)
	}
	return res
}

// TestEntryTokenVerifiesWithPyJWT: a token a running ws-gateway signed
// verifies with a JWT library nobody here wrote (PyJWT, fed the gateway's
// JWKS), which also refuses it tampered, for another event, from another
// issuer and, once its hold has ended, expired.
func TestEntryTokenVerifiesWithPyJWT(t *testing.T) {
	requirePyJWT(t)
	const iss = "https://queue.example.test"
	sys := testsys.Start(t, testsys.Options{})
	common := []string{"WAITQ_KAFKA_BROKERS=" + strings.Join(sys.Kafka.ListenAddrs(), ","), "WAITQ_REDIS_URL=" + sys.Redis.URL(), "WAITQ_TICKET_SECRET=" + ticketSecret}
	producer := startProc(t, "producer-api", append(common, "WAITQ_ADMIN_TOKEN="+adminToken)...)
	startProc(t, "ingest-consumer", append(common, "WAITQ_DISCOVERY_INTERVAL=200ms")...)
	gw := startProc(t, "ws-gateway", append(common, "WAITQ_STATUS_INTERVAL=100ms", "WAITQ_ADMIT_INTERVAL=200ms", "WAITQ_PUBLIC_URL="+iss)...)

	ev := testenv.EventID(t)
	req, _ := http.NewRequest(http.MethodPut, producer.URL()+"/v1/admin/events/"+ev, strings.NewReader(`{"capacity":1,"holdSeconds":3,"partitions":1}`))
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
	res := runPyJWT(t, jwks, iss, map[string]pyCase{
		"valid":       {token, ev},
		"tampered":    {forged, ev},
		"other event": {token, "other-" + ev},
	})
	if r := res["valid"]; !r.OK || r.Sub != "alice" || r.JTI == "" || r.Exp*1000 < a.ExpiresAt || r.Exp*1000 >= a.ExpiresAt+1000 || r.Kid == "" {
		t.Fatalf("PyJWT on the gateway's token: %+v (frame expiresAt %d)", r, a.ExpiresAt)
	}
	for name, want := range map[string]string{"tampered": "InvalidSignatureError", "other event": "InvalidAudienceError"} {
		if r := res[name]; r.OK || r.Error != want {
			t.Errorf("PyJWT on the %s token: %+v, want %s", name, r, want)
		}
	}
	if r := runPyJWT(t, jwks, "https://elsewhere.example.test", map[string]pyCase{"token": {token, ev}})["token"]; r.OK || r.Error != "InvalidIssuerError" {
		t.Errorf("PyJWT expecting another issuer: %+v", r)
	}

	// The gateway agrees on the same token (its own library path), then
	// both refuse it once the hold has ended (PyJWT: no leeway).
	if v := verifyAtGateway(t, gw.URL(), token); v.State != "admitted" || v.UserID != "alice" {
		t.Fatalf("the gateway's verify: %+v", v)
	}
	time.Sleep(time.Until(time.Unix(res["valid"].Exp, 0)) + 100*time.Millisecond)
	if r := runPyJWT(t, jwks, iss, map[string]pyCase{"expired": {token, ev}})["expired"]; r.OK || r.Error != "ExpiredSignatureError" {
		t.Errorf("PyJWT after the hold: %+v, want ExpiredSignatureError", r)
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
