//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/waitq/waitq/internal/testkit/testenv"
)

const (
	adminToken   = "it-admin-token"
	ticketSecret = "it-ticket-secret-0123456789"
	// label marks every container and network of the suite, so that
	// scripts/test.sh can sweep what a killed run left behind.
	label = "io.waitq.test"
)

// runLabel is the label's value: WAITQ_IT_LABEL, "integration" unless set.
// Runs that share a Docker Engine each set their own, so that one's sweep
// leaves the other's containers alone.
var runLabel = getenv("WAITQ_IT_LABEL", "integration")

// images names the image of each part.
type images struct {
	producer, ingest, gateway string
	rebuild                   string // waitq-rebuild, run once by the campaign's rebuild scene
	broker, redis             string
	apacheKafka               bool // broker is Apache Kafka, not kfake-broker
}

var (
	img       images
	docker    *testcontainers.DockerClient
	dockerErr error // no Docker Engine: skip, or fail in CI
	buildErr  error // the images could not be built: always fail
)

func TestMain(m *testing.M) {
	// Ryuk (the reaper container) cannot be pulled here; every test cleans
	// up after itself instead, and scripts/test.sh sweeps by label.
	os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	// Published ports are reached on loopback. Left to itself, testcontainers
	// may guess the host from the default route, which is not ours to dial.
	os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
	tag := getenv("WAITQ_IMAGE_TAG", "it")
	img = images{
		producer: "waitq/producer-api:" + tag,
		ingest:   "waitq/ingest-consumer:" + tag,
		gateway:  "waitq/ws-gateway:" + tag,
		rebuild:  "waitq/waitq-rebuild:" + tag,
		broker:   getenv("WAITQ_IT_KAFKA_IMAGE", "waitq/kfake-broker:"+tag),
		redis:    getenv("WAITQ_IT_REDIS_IMAGE", "waitq/redis:"+tag),
	}
	img.apacheKafka = !strings.HasPrefix(img.broker, "waitq/kfake-broker:")

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	docker, dockerErr = testcontainers.NewDockerClientWithOpts(ctx)
	if dockerErr == nil {
		// The client may be made without an engine behind it: ask it.
		_, dockerErr = docker.Ping(ctx, client.PingOptions{})
	}
	cancel()
	if dockerErr == nil && os.Getenv("WAITQ_IT_BUILT") != "1" {
		buildErr = buildImages()
	}
	code := m.Run()
	if docker != nil {
		docker.Close()
	}
	os.Exit(code)
}

// buildImages runs scripts/build-images.sh, the one place images are made.
func buildImages() error {
	cmd := exec.Command("bash", "../../scripts/build-images.sh")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("scripts/build-images.sh: %w", err)
	}
	return nil
}

// requireDocker stops the test when the suite cannot run: no Docker Engine
// skips on a laptop and fails in CI; images that did not build always fail.
func requireDocker(t *testing.T) {
	t.Helper()
	if dockerErr != nil {
		testenv.Unavailable(t, "Docker Engine: %v", dockerErr)
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	if docker == nil {
		t.Fatal(errors.New("no Docker client"))
	}
}

func getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
