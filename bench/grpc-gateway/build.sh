#!/usr/bin/env bash
# Builds bench/grpc-gateway/main.go with the pet service's proto into $1 (a directory), offline,
# from Debian's packages (GOPATH mode):
#   apt-get install -y golang-go protobuf-compiler golang-goprotobuf-dev golang-grpc-gateway \
#     golang-github-grpc-ecosystem-grpc-gateway-dev golang-google-grpc-dev golang-google-genproto-dev
# Prints the binary's path. Rebuilds only when the proto, main.go or the HTTP binding (proto/petstore/v1/http.yaml) changed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$1"
stamp="$(cat "$root/proto/petstore/v1/pet_service.proto" "$here/main.go" "$root/proto/petstore/v1/http.yaml" | sha256sum | cut -c1-16)"
bin="$out/grpc-gateway-petstore-$stamp"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
gopath="$out/gopath"
rm -rf "$gopath/src/petstore.local"
mkdir -p "$gopath/src/petstore.local/gen" "$gopath/src/petstore.local/gw"
# Debian's protoc-gen-go (1.3) predates proto3 `optional`; without the keyword a field has the same
# wire format, and only presence (which this proxy never inspects) is lost, so build from a copy without it.
proto="$out/proto"
rm -rf "$proto" && mkdir -p "$proto/petstore/v1"
sed -E 's/^([[:space:]]*)optional /\1/' "$root/proto/petstore/v1/pet_service.proto" > "$proto/petstore/v1/pet_service.proto"
protoc -I "$proto" \
  --go_out=plugins=grpc:"$gopath/src" \
  --grpc-gateway_out=logtostderr=true,grpc_api_configuration="$root/proto/petstore/v1/http.yaml":"$gopath/src" \
  petstore/v1/pet_service.proto
# protoc-gen-go places its file by the proto package (petstore/v1), the gateway by the M mapping: one package.
mv "$gopath/src/petstore/v1/"*.go "$gopath/src/petstore.local/gen/"
rm -rf "$gopath/src/petstore"
cp "$here/main.go" "$gopath/src/petstore.local/gw/main.go"
GO111MODULE=off GOPATH="$gopath:/usr/share/gocode" GOCACHE="$out/gocache" go build -o "$bin" petstore.local/gw
echo "$bin"
