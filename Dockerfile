# One image with every waitq program as a static binary; compose.yaml picks
# the program per service with `entrypoint`. The base is busybox only so that
# health checks have wget; the programs need nothing from it.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ \
      ./cmd/producer-api ./cmd/ingest-consumer ./cmd/ws-gateway ./cmd/devstack \
      ./cmd/waitq-guard ./cmd/demoshop ./cmd/waitq-verify

FROM busybox:1.36-musl
COPY --from=build /out/ /usr/local/bin/
USER 65534:65534
