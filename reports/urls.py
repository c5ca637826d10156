from django.urls import path

from reports import views

urlpatterns = [
    path("reports/", views.report_list, name="report_list"),
    path("runs/<uuid:code>/report/", views.report_new, name="report_new"),
    path("comparisons/<uuid:code>/report/", views.report_new_from_comparison,
         name="report_new_from_comparison"),
    # The engineer's pages name a report by its code: the link tokens are not stored.
    path("reports/<uuid:code>/", views.report_preview, name="report_preview"),
    path("reports/<uuid:code>/publish/", views.report_publish, name="report_publish"),
    path("reports/<uuid:code>/versions/<int:number>/reissue/", views.report_reissue,
         name="report_reissue"),
    path("reports/<uuid:code>/revoke/", views.report_revoke, name="report_revoke"),
    # Public: no login. The token is the only key; nothing on the page links elsewhere.
    path("r/<str:token>/", views.report_public, name="report_public"),
    path("r/<str:token>/report.pdf", views.report_pdf, name="report_pdf"),
]
