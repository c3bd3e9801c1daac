"""The audit trail: who changed what, written (``record``) and read (``selectors``)."""
