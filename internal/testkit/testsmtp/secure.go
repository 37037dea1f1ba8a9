package testsmtp

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/testkit/testenv"
)

// secureServer is aiosmtpd's Controller with STARTTLS required and AUTH
// (PLAIN or LOGIN, after STARTTLS) of one user; argv: host, port, maildir,
// cert, key, user, password.
const secureServer = `
import signal, ssl, sys
from aiosmtpd.controller import Controller
from aiosmtpd.handlers import Mailbox
from aiosmtpd.smtp import AuthResult, LoginPassword
host, port, maildir, cert, key, user, pw = sys.argv[1:8]
ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
ctx.load_cert_chain(cert, key)
def auth(server, session, envelope, mechanism, data):
    ok = isinstance(data, LoginPassword) and data.login.decode() == user and data.password.decode() == pw
    return AuthResult(success=ok)
c = Controller(Mailbox(maildir), hostname=host, port=int(port), tls_context=ctx, require_starttls=True,
               authenticator=auth, auth_required=True, auth_require_tls=True)
c.start()
print("ready", flush=True)
signal.sigwait([signal.SIGTERM, signal.SIGINT])
c.stop()
`

// StartSecure runs an aiosmtpd that requires STARTTLS (a certificate for
// 127.0.0.1 of its own CA, returned) and AUTH as user with password.
func StartSecure(tb testing.TB, user, password string) (*Server, *x509.CertPool) {
	tb.Helper()
	if err := exec.Command(python, "-c", "import aiosmtpd").Run(); err != nil {
		testenv.Unavailable(tb, "aiosmtpd (Debian's python3-aiosmtpd for %s): %v", python, err)
	}
	dir := tb.TempDir()
	pool := selfSigned(tb, dir)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), dir: filepath.Join(dir, "maildir")}
	cmd := exec.Command(python, "-c", secureServer, "127.0.0.1", strconv.Itoa(port), s.dir,
		filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), user, password)
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	ready := make(chan bool, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- strings.TrimSpace(line) == "ready"
	}()
	select {
	case ok := <-ready:
		if !ok {
			tb.Fatalf("aiosmtpd did not start: %s", stderr.String())
		}
	case <-time.After(15 * time.Second):
		tb.Fatalf("aiosmtpd did not start within 15 s: %s", stderr.String())
	}
	return s, pool
}

// selfSigned writes cert.pem and key.pem for 127.0.0.1 into dir and returns
// the pool that trusts the certificate.
func selfSigned(tb testing.TB, dir string) *x509.CertPool {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "testsmtp"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	write := func(name, typ string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	write("cert.pem", "CERTIFICATE", der)
	write("key.pem", "EC PRIVATE KEY", kder)
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}
