// Renders the API reference at /docs from the service's own contract.
//
// URLs are relative to /docs, so that the page also works behind a proxy
// that serves the service under a prefix. The page fetches the spec itself
// rather than handing Swagger UI its URL, to put this service first among
// the servers: "Try it out" then calls the service that served the page.
'use strict';

(function () {
  var base = new URL('.', window.location.href).href.replace(/\/$/, '');
  var root = document.getElementById('swagger-ui');

  fetch('api/v1/openapi.json', { headers: { Accept: 'application/json' } })
    .then(function (res) {
      if (!res.ok) {
        throw new Error('GET api/v1/openapi.json answered ' + res.status);
      }
      return res.json();
    })
    .then(function (spec) {
      spec.servers = [{ url: base, description: 'This service' }].concat(spec.servers || []);
      window.ui = SwaggerUIBundle({
        spec: spec,
        dom_id: '#swagger-ui',
        layout: 'BaseLayout',
        presets: [SwaggerUIBundle.presets.apis],
        deepLinking: true,
        displayOperationId: true,
        displayRequestDuration: true,
        // No validity badge: it would send the spec to validator.swagger.io,
        // and this page talks to no host but the service.
        validatorUrl: null,
      });
    })
    .catch(function (err) {
      root.textContent = 'The API reference could not load the contract: ' + err.message;
    });
})();
