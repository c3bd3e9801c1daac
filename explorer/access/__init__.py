"""Who may do what: roles per catalog (``permissions``), the views' guards (``auth``), users,
grants and API tokens managed from the site (``services``, ``selectors``, ``views``)."""
