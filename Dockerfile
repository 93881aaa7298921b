# The refresher image: one static binary that runs every subcommand
# (`refresher migrate`, `refresher run`, `refresher worker --kind NAME`).
#
#   docker build -t refresher:local .
#   docker run --rm refresher:local --help

# Build stage. The Go version is the `go` line of go.mod, patch included
# (golang:1.26 alone may resolve to an older patch than go.mod needs).
FROM golang:1.26.8 AS build
WORKDIR /src
# Modules first, so that a code change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO_ENABLED=0: a static binary that needs no libc. -tags timetzdata embeds
# Go's copy of the time zone database, so RRULEs with a TZID work even where
# /usr/share/zoneinfo is missing.
RUN CGO_ENABLED=0 go build -trimpath -tags timetzdata -ldflags="-s -w" \
      -o /out/refresher ./cmd/refresher

# Run stage: distroless "static" holds CA certificates (the worker GETs https
# URLs), tzdata (/usr/share/zoneinfo) and a non-root user, and no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/refresher /usr/local/bin/refresher
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/refresher"]
CMD ["--help"]
