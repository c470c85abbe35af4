# One image with the scheduler, the executor and mesos-local (Debian 12).
# docker-compose.yml runs the scheduler from it and copies the executor into
# the volume the Mesos agent runs it from; mesos-local is there to run the
# embedded master+agent as a container of its own
# (`mesos-local --address 0.0.0.0 --allow-remote`: it has no auth).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN make build

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates xz-utils bzip2 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/bin/scheduler /src/bin/executor /src/bin/tenant-init /src/bin/mesos-local /usr/local/bin/
EXPOSE 8899 5050
ENTRYPOINT ["/usr/local/bin/scheduler"]
