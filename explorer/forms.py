from django import forms


class TableSearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=200, strip=True)
