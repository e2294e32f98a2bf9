// A grpc-gateway (v1, from Debian's packages) reverse proxy in front of the pet service, for the benchmark:
// PET_SERVICE_ADDR=127.0.0.1:50051 GW_LISTEN=127.0.0.1:8092 ./grpc-gateway-petstore (built by build.sh).
package main

import (
	"context"
	"log"
	"net/http"
	"os"

	"github.com/grpc-ecosystem/grpc-gateway/runtime"
	"google.golang.org/grpc"

	gw "petstore.local/gen"
)

func main() {
	mux := runtime.NewServeMux(runtime.WithMarshalerOption(runtime.MIMEWildcard, &runtime.JSONPb{EmitDefaults: true}))
	opts := []grpc.DialOption{grpc.WithInsecure()}
	if err := gw.RegisterPetServiceHandlerFromEndpoint(context.Background(), mux, os.Getenv("PET_SERVICE_ADDR"), opts); err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.ListenAndServe(os.Getenv("GW_LISTEN"), mux))
}
