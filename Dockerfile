# dynwatch: a static binary in a minimal, non-root image (from scratch: the
# binary, the CA bundle and a passwd naming the non-root user).
#   docker build -t dynwatch:latest --build-arg VERSION=$(git describe --tags --always) --build-arg COMMIT=$(git rev-parse --short HEAD) .
# Without a container engine, `make image` builds the same layout as an image
# index for linux/amd64 and linux/arm64 (bin/dynwatch-image) and an image tarball
# (docker load -i bin/dynwatch-image.tar); `make push IMAGE=…` pushes the index.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" -o /dynwatch ./cmd/dynwatch
RUN printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > /passwd && \
    printf 'root:x:0:\nnonroot:x:65532:\n' > /group

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /passwd /etc/passwd
COPY --from=build /group /etc/group
COPY --from=build /dynwatch /dynwatch
USER 65532:65532
ENTRYPOINT ["/dynwatch"]
CMD ["run", "--config", "/etc/dynwatch/config.yaml"]
