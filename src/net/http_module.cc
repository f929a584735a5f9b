// liblaggard_http.so's one exported symbol (net/http_module.h).

#include "net/http_module.h"

namespace laggard::net {

HttpServerBackend* NewHttpServer(int threads);                           // http_server.cc
void HttpGetOnce(const HttpGetRequest& request, HttpGetResult* result);  // http_client.cc

}  // namespace laggard::net

extern "C" __attribute__((visibility("default"))) const laggard::net::HttpModule*
laggard_http_module() {
  static const laggard::net::HttpModule kModule{
      laggard::net::kHttpModuleAbi, &laggard::net::NewHttpServer, &laggard::net::HttpGetOnce};
  return &kModule;
}
