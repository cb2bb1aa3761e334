# Multi-stage build: a static, non-root gateway binary on an empty base image.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/gateway ./cmd/gateway \
 && mkdir -p /out/run/hashgate /out/secrets

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build --chown=65532:65532 /out/run /run
COPY --from=build --chown=65532:65532 /out/secrets /secrets
COPY --from=build /out/gateway /gateway
USER 65532:65532
EXPOSE 8080
HEALTHCHECK --interval=5s --timeout=2s --retries=10 CMD ["/gateway", "healthcheck"]
ENTRYPOINT ["/gateway"]
