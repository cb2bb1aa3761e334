// Starts Swagger UI on this gateway's contract (GET /openapi.yaml, beside this page). It is a
// file rather than an inline script so that the page's Content-Security-Policy can allow this
// origin's scripts and nothing else. "Try it out" calls the same gateway: the contract names
// no servers, so Swagger UI sends requests to the origin it loaded the contract from.
window.addEventListener("load", function () {
  "use strict";
  window.ui = SwaggerUIBundle({
    url: "openapi.yaml",
    dom_id: "#swagger-ui",
    deepLinking: true,
    displayOperationId: true,
    // The base layout: the contract's operations without the top bar's URL box.
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    // No online validator badge: it would send the contract to a third party.
    validatorUrl: null,
  });
});
