// The one way to include Boost.Asio and Beast in latdoc.
//
// Boost 1.74's boost/asio/awaitable.hpp uses std::exchange without including <utility>, which
// breaks under g++ 12 in C++20 mode, so <utility> comes first. Include this header only from .cc
// files of http/: Beast is slow to compile, and public headers stay free of it (pimpl).
#pragma once

#include <utility>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace latdoc::http {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = boost::asio::ip::tcp;
}  // namespace latdoc::http
