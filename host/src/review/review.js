// toolhost review page: the little it needs beyond plain forms.
// - A grant edited away from what the tool asked for is marked, and
//   approving it says what changes.
// - Rejecting asks once more.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  for (const card of document.querySelectorAll("article.tool")) {
    const requested = card.dataset.requested || "";
    const grant = card.querySelector("form.approve input[name=grant]");
    const approve = card.querySelector("form.approve");
    const reject = card.querySelector("form.reject");
    const normal = (s) => s.split(/[\s,]+/).filter(Boolean).sort().join(", ");
    const mark = () => grant.classList.toggle("changed-grant", normal(grant.value) !== normal(requested));
    if (grant) {
      grant.addEventListener("input", mark);
      mark();
    }
    if (approve && grant) {
      approve.addEventListener("submit", (event) => {
        const given = normal(grant.value) || "nothing";
        if (grant.classList.contains("changed-grant") &&
            !window.confirm(`Approve with ${given} instead of what it asked for (${normal(requested) || "nothing"})?`)) {
          event.preventDefault();
        }
      });
    }
    if (reject) {
      reject.addEventListener("submit", (event) => {
        const name = card.querySelector("h3")?.firstChild?.textContent?.trim() || "this tool";
        if (!window.confirm(`Reject ${name}? Its source is removed.`)) {
          event.preventDefault();
        }
      });
    }
  }
});
