# Scheduler and executor in one image (the executor binary is also served to
# agents through executor_path when they share the image or a volume).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN make build

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates xz-utils bzip2 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/bin/scheduler /src/bin/executor /usr/local/bin/
EXPOSE 8899
ENTRYPOINT ["/usr/local/bin/scheduler"]
