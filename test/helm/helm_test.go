package helm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/testkit/testenv"
)

// helmVersion is the helm the tests build from the Go module proxy; it is
// not a dependency of the module (go install pkg@version builds it apart).
const helmVersion = "v3.19.5"

// chartDir is the chart, relative to this package.
const chartDir = "../../deploy/helm/waitq"

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helmBinary returns a helm binary: $WAITQ_HELM when set (scripts/test.sh
// builds one ahead), else helmVersion built with go install into the user's
// cache directory, once per machine. Without one the test skips, or fails
// with CI=true.
func helmBinary(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() { helmPath, helmErr = obtainHelm() })
	if helmErr != nil {
		testenv.Unavailable(t, "helm %s: %v", helmVersion, helmErr)
	}
	return helmPath
}

func obtainHelm() (string, error) {
	if p := os.Getenv("WAITQ_HELM"); p != "" {
		return p, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "waitq", "helm-"+helmVersion)
	bin := filepath.Join(dir, "helm")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if _, err := exec.LookPath("go"); err != nil {
		return "", errors.New("no go command to build helm with")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", "helm.sh/helm/v3/cmd/helm@"+helmVersion)
	cmd.Dir = tmp // outside the module: helm is not one of its dependencies
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=", "GOWORK=off", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install helm.sh/helm/v3/cmd/helm@%s: %w\n%s", helmVersion, err, out)
	}
	if err := os.Rename(filepath.Join(tmp, "helm"), bin); err != nil {
		return "", err
	}
	return bin, nil
}

// helm runs the helm binary with args and returns its standard output, or
// its error with the standard error.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helmBinary(t), args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %v: %w\n%s%s", args, err, stderr.String(), stdout.String())
	}
	return stdout.String(), nil
}
