from django.urls import path

from audit import api

urlpatterns = [path("audit", api.AuditLogView.as_view()), path("audit/export", api.AuditExportView.as_view())]
