// API reference: each GET operation's form fills the path template, adds the query
// parameters, calls the API with the page's session and shows the status and JSON.
document.querySelectorAll("form.try").forEach((form) => {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    let path = form.dataset.path;
    const query = new URLSearchParams();
    form.querySelectorAll("input").forEach((input) => {
      if (input.dataset.in === "path") {
        path = path.replace("{" + input.name + "}", encodeURIComponent(input.value));
      } else if (input.value !== "") {
        query.append(input.name, input.value);
      }
    });
    const url = path + (query.toString() ? "?" + query : "");
    const out = form.querySelector(".result");
    out.hidden = false;
    out.textContent = "GET " + url + " …";
    const response = await fetch(url, {headers: {Accept: "application/json"}});
    let body = await response.text();
    try { body = JSON.stringify(JSON.parse(body), null, 2); } catch (e) { /* not JSON */ }
    out.textContent = "GET " + url + " → " + response.status + "\n" + body;
  });
});
