# dynwatch: a static binary in a distroless, non-root image.
#   docker build -t dynwatch:latest .
# Without a container engine, `make image` builds the same layout as an image
# tarball (docker load -i bin/dynwatch-image.tar).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-X main.version=${VERSION}" -o /dynwatch ./cmd/dynwatch

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /dynwatch /dynwatch
USER 65532:65532
ENTRYPOINT ["/dynwatch"]
CMD ["run", "--config", "/etc/dynwatch/config.yaml"]
