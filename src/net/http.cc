#include "net/http.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/text.h"
#include "net/http_module.h"

#ifndef LAGGARD_INSTALLED_HTTP_MODULE
#error "LAGGARD_INSTALLED_HTTP_MODULE: the module's installed path, set by src/CMakeLists.txt"
#endif

namespace laggard::net {
namespace {

// The executable's own folder (/proc/self/exe), empty when unreadable.
std::string ExecutableFolder() {
  char path[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return "";
  std::string p(path, static_cast<size_t>(n));
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? "" : p.substr(0, slash);
}

StatusOr<const HttpModule*> Load() {
  void* handle = nullptr;
  std::string path, errors;
  for (const std::string& p : HttpModulePaths()) {
    handle = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      path = p;
      break;
    }
    const char* why = dlerror();
    errors += fmt::format("{}{}", errors.empty() ? "" : "; ", why != nullptr ? why : p);
  }
  if (handle == nullptr) {
    return Status::Error(fmt::format(
        "laggard's HTTP module did not load ({}). The agent, `watch` and Prometheus reads need "
        "it: install laggard with its module (the .deb, or cmake --install), name the module "
        "in LAGGARD_HTTP_MODULE, or build the target laggard_http",
        errors));
  }
  using Entry = const HttpModule* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, kHttpModuleSymbol));
  const HttpModule* module = entry != nullptr ? entry() : nullptr;
  if (module == nullptr || module->abi != kHttpModuleAbi || module->new_server == nullptr ||
      module->get == nullptr) {
    return Status::Error(fmt::format(
        "{} is not this laggard's HTTP module (another build's?): reinstall laggard", path));
  }
  return module;
}

StatusOr<const HttpModule*> Module() {
  static const StatusOr<const HttpModule*> loaded = Load();
  return loaded;
}

}  // namespace

std::vector<std::string> HttpModulePaths() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("LAGGARD_HTTP_MODULE"); env != nullptr && *env != '\0') {
    return {env};
  }
  namespace fs = std::filesystem;
  paths.push_back(
      fs::path(ExecutableFolder() + "/../lib/laggard/liblaggard_http.so").lexically_normal());
  std::string installed = fs::path(LAGGARD_INSTALLED_HTTP_MODULE).lexically_normal();
  if (installed != paths[0]) paths.push_back(installed);
  return paths;
}

Status OpenHttpModule() { return Module().status(); }

HttpServer::HttpServer(int threads) {
  StatusOr<const HttpModule*> module = Module();
  if (!module.ok()) {
    loaded_ = module.status();
    return;
  }
  backend_.reset((*module)->new_server(threads));
}

HttpServer::~HttpServer() = default;

void HttpServer::Get(const std::string& path, Handler handler) {
  if (backend_) backend_->Get(path, std::move(handler));
}

Status HttpServer::Listen(const std::string& host_port) {
  if (!backend_) return loaded_;
  std::string host;
  int port = 0;
  if (!ParseHostPort(host_port, host, port)) {
    return Status::Error(fmt::format("--listen: expected HOST:PORT, got '{}'", host_port));
  }
  int bound = backend_->Bind(host, port);
  if (bound <= 0) {
    return Status::Error(port == 0 ? fmt::format("--listen {}: cannot bind", host_port)
                                   : fmt::format("--listen {}: cannot bind (address in use or "
                                                 "not local?)",
                                                 host_port));
  }
  port_ = bound;
  return Status::Ok();
}

uint64_t HttpServer::refused_connections() const {
  return backend_ ? backend_->refused_connections() : 0;
}
uint64_t HttpServer::timed_out_connections() const {
  return backend_ ? backend_->timed_out_connections() : 0;
}

void HttpServer::Start() {
  if (backend_) backend_->Start();
}

void HttpServer::Stop() {
  if (backend_) backend_->Stop();
}

StatusOr<HttpGetResult> HttpGet(const HttpGetRequest& request) {
  StatusOr<const HttpModule*> module = Module();
  if (!module.ok()) return module.status();
  HttpGetResult result;
  (*module)->get(request, &result);
  return result;
}

}  // namespace laggard::net
