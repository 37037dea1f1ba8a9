// Package helm checks the Helm chart in deploy/helm/waitq: helm lint, and
// helm template with several value sets, each rendered document decoded
// strictly into its Kubernetes API type (k8s.io/api, unknown fields refused)
// and checked against what the programs serve and read. helm itself comes
// from the Go module proxy (helm_test.go), built once into the user's cache; the
// package holds tests only.
package helm
