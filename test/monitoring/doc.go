// Package monitoring tests deploy/prometheus and deploy/grafana: promtool
// checks and unit-tests the rules, and a real Prometheus scrapes a devstack
// run in process while every expression of the dashboard is queried. It
// holds tests only.
package monitoring
