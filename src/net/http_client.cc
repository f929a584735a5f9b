// The module's client: one GET (net/http.h, HttpGet).

#include <httplib.h>

#include <string>

#include "net/http_module.h"

namespace laggard::net {
namespace {

// httplib's error in words: its own names ("Connection", "Read") read as a
// message cut short.
std::string HttpErrorText(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "connection failed (nothing listening there, refused, or the host unreachable)";
    case httplib::Error::ConnectionTimeout: return "connection timed out";
    case httplib::Error::Read:
      return "the connection broke while reading the answer (or it timed out)";
    case httplib::Error::Write: return "the connection broke while sending the query";
    case httplib::Error::SSLConnection:
    case httplib::Error::SSLServerVerification:
    case httplib::Error::SSLLoadingCerts:
      return "TLS failed (laggard speaks plain http:// to Prometheus)";
    case httplib::Error::ExceedRedirectCount: return "too many redirects";
    default: return "request failed (" + httplib::to_string(e) + ")";
  }
}

}  // namespace

void HttpGetOnce(const HttpGetRequest& request, HttpGetResult* result) {
  *result = HttpGetResult();
  httplib::Client client(request.url);
  client.set_connection_timeout(request.timeout_s, 0);
  client.set_read_timeout(request.timeout_s, 0);
  httplib::Params params;
  for (const auto& [key, value] : request.params) params.emplace(key, value);
  httplib::Result res = client.Get(request.path, params, httplib::Headers());
  if (!res) {
    result->error = HttpErrorText(res.error());
    return;
  }
  result->answered = true;
  result->status = res->status;
  result->body = std::move(res->body);
}

}  // namespace laggard::net
