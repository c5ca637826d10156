"""A form's fields as the kinds they are declared as.

Form.fields maps each name to the base Field type, so setting a queryset or choices on a field
the form declares as a ModelChoiceField needs it narrowed first; a wrong kind is a programming
error, raised here with both names.
"""

from __future__ import annotations

from typing import TypeVar

from django import forms

FieldT = TypeVar("FieldT", bound=forms.Field)


def declared_field(form: forms.BaseForm, name: str, kind: type[FieldT]) -> FieldT:
    field = form.fields[name]
    if not isinstance(field, kind):
        raise TypeError(
            f"{type(form).__name__}.{name} is a {type(field).__name__}, not a {kind.__name__}"
        )
    return field
