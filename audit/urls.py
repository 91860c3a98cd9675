from django.urls import path

from audit import api

urlpatterns = [path("", api.AuditLogView.as_view()), path("/export", api.AuditExportView.as_view())]
