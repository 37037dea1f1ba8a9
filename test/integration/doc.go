// Package integration runs waitq as containers on one Docker network (the
// three services, a Kafka-protocol broker and Redis) and injects faults with
// the Docker Engine: SIGKILL, pause, restart. Its tests carry the build tag
// integration: go test -tags integration ./test/integration.
//
// The images are built locally by scripts/build-images.sh (FROM scratch
// service images, kfake as the broker, Redis on a debootstrapped Debian), so
// no registry is needed. WAITQ_IT_KAFKA_IMAGE and WAITQ_IT_REDIS_IMAGE
// select other images (apache/kafka, redis:7) where a registry is at hand.
package integration
